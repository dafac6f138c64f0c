# mypy: allow-untyped-defs
# (Kernels take no annotations: their types come from the arguments of each call.)
"""Numerical checks of Tack on one backend, optionally with the VTK exchange.

    python examples/validate.py --arch cpu            arrays, kernels, DLPack
    python examples/validate.py --arch cpu --vtk      ... and the VTK interop
    python examples/validate.py --arch cuda           the same on a CUDA device

Each check compares Tack's result with NumPy's and prints one line; the script exits
with status 1 if any check fails, and 2 (checking nothing) when the --arch device
cannot be opened. The VTK option is explicit because the usual CPU and
GPU checks do not need VTK; VTK's arrays are host memory, so the VTK checks run on the
CPU whatever --arch says.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from collections.abc import Callable

import numpy as np

import tack

Check = Callable[[tack.Device], None]
CHECKS: list[tuple[str, Check]] = []


def check(name: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS.append((name, fn))
        return fn

    return register


@check("copy in, copy out")
def _copies(device: tack.Device) -> None:
    host = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    data = tack.array(host, device=device)
    np.testing.assert_array_equal(data.numpy(), host)
    tack.copyto(data, host * 2)
    np.testing.assert_array_equal(data.reshape((6, 4)).numpy(), (host * 2).reshape(6, 4))


@tack.kernel
def _radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


@check("kernel: radius_squared")
def _kernel(device: tack.Device) -> None:
    values = tack.zeros(9 * 7 * 5, dtype=tack.f32, device=device)
    _radius_squared(values, 9, 7)
    z, y, x = np.mgrid[:5, :7, :9]
    expected = ((x - 4) ** 2 + (y - 3) ** 2 + (z - 2) ** 2).ravel().astype(np.float32)
    np.testing.assert_array_equal(values.numpy(), expected)


@tack.kernel
def _saxpy(out, a, x, y):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@check("kernel: saxpy, float32 and float64, bit for bit")
def _kernel_saxpy(device: tack.Device) -> None:
    rng = np.random.default_rng(7)
    for dt in (np.float32, np.float64):
        x, y = rng.standard_normal((2, 100_003)).astype(dt)
        out = tack.zeros(x.shape, dtype=dt, device=device)
        _saxpy(out, dt(0.75), tack.array(x, device=device), tack.array(y, device=device))
        # two roundings, as NumPy does: no fused multiply-add on any backend
        np.testing.assert_array_equal(out.numpy(), dt(0.75) * x + y)


@check("DLPack with NumPy, both ways")
def _dlpack(device: tack.Device) -> None:
    if device.name != "cpu":
        # NumPy reads host memory only: a round trip through Tack itself instead
        data = tack.array(np.arange(10, dtype=np.float32), device=device)
        again = tack.from_dlpack(data)
        assert again.ptr == data.ptr and again.device == data.device
        np.testing.assert_array_equal(again.numpy(), np.arange(10, dtype=np.float32))
        return
    host = np.arange(10, dtype=np.float32)
    shared = tack.from_dlpack(host)
    assert shared.ptr == host.ctypes.data
    back = np.from_dlpack(shared)
    back[3] = -1.0
    assert host[3] == -1.0


@check("VTK: the image example")
def _vtk_example(device: tack.Device) -> None:
    import vtk_interop

    vtk_interop.run()


@check("VTK: .vti written and read back")
def _vtk_file(device: tack.Device) -> None:
    import vtk_interop
    import vtk_render

    from tack.interop.vtk import vtk_to_array

    image = vtk_interop.run()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "radius.vti")
        vtk_interop.write_vti(image, path)
        back = vtk_render.read_vti(path)
    values = vtk_to_array(back.point_data["radius_squared"])
    np.testing.assert_array_equal(values.numpy(), vtk_interop.expected_field())


@check("VTK: DLPack exchange with NumPy")
def _vtk_dlpack(device: tack.Device) -> None:
    from vtkmodules.vtkCommonCore import vtkDoubleArray

    from tack.interop.vtk_dlpack import DLPackArray, dlpack_to_vtk

    host = np.arange(12, dtype=np.float64).reshape(4, 3)
    vtk_array = dlpack_to_vtk(host, name="points")
    assert vtk_array.GetNumberOfTuples() == 4 and vtk_array.GetTuple3(1) == (3, 4, 5)
    source = vtkDoubleArray(number_of_components=2, number_of_tuples=3)
    source.Fill(7.0)
    view = np.from_dlpack(DLPackArray(source))
    view[0, 1] = 1.0
    assert view.shape == (3, 2) and source.GetComponent(0, 1) == 1.0


VTK_CHECKS = {name for name, _ in CHECKS if name.startswith("VTK")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu", help="cpu, cuda, hip or level_zero")
    parser.add_argument("--vtk", action="store_true", help="also check the VTK interop")
    args = parser.parse_args(argv)
    try:
        device = tack.set_default_device(args.arch)
    except tack.TackError as e:
        print(f"validate: no usable {args.arch} device ({e}); nothing was checked",
              file=sys.stderr)
        return 2
    failed = 0
    for name, fn in CHECKS:
        if name in VTK_CHECKS and not args.vtk:
            continue
        on = tack.set_default_device("cpu") if name in VTK_CHECKS else device
        try:
            fn(on)
        except Exception:
            failed += 1
            print(f"FAIL  {name} [{on.name}]")
            traceback.print_exc()
        else:
            print(f"ok    {name} [{on.name}]")
        finally:
            tack.set_default_device(device)
    if failed:
        print(f"validate: {failed} check(s) failed")
        return 1
    print("validate: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
