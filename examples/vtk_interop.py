# mypy: allow-untyped-defs
# (Kernels take no annotations: their types come from the arguments of each call.)
"""Share a VTK image's scalars with Tack on the CPU, compute on them, export them to VTK.

A 9 x 7 x 5 vtkImageData gets a float array that VTK allocates. Tack wraps that
allocation without copying, a Tack kernel writes each point's squared distance from
the centre into it, and the Tack array goes back to VTK as a second array over the
same memory. The values are checked against NumPy; ``--output`` writes the image as a
.vti file, and ``--png`` (by default next to the .vti) renders it offscreen.

Where a CUDA device is there, the same kernel then runs on a CUDA copy of the field
(VTK's arrays are host memory), is checked against NumPy and copied back into VTK's
array; without one the example says so and stays on the CPU, unless
``--require-cuda`` makes that an error.

Works with the PyPI VTK 9.7.1 wheel: where VTK lacks vtkmodules.util.dlpack_support,
Tack's own implementation of it shares the host memory.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
from vtk_render import write_png
from vtkmodules.vtkCommonCore import vtkFloatArray
from vtkmodules.vtkCommonDataModel import vtkImageData

import tack
from tack.interop.vtk import array_to_vtk, vtk_to_array

DIMENSIONS = (9, 7, 5)


@tack.kernel
def radius_squared(values, nx, ny):
    for i in range(values.shape[0]):
        x = float(i % nx) - float(nx - 1) * 0.5
        y = float((i // nx) % ny) - float(ny - 1) * 0.5
        z = float(i // (nx * ny)) - 2.0
        values[i] = x * x + y * y + z * z


def expected_field() -> np.ndarray[Any, np.dtype[np.float32]]:
    """The NumPy reference. A VTK structured image's x index varies fastest."""
    nx, ny, nz = DIMENSIONS
    z, y, x = np.mgrid[:nz, :ny, :nx]
    centre = [(n - 1) / 2 for n in DIMENSIONS]
    r2 = (x - centre[0]) ** 2 + (y - centre[1]) ** 2 + (z - centre[2]) ** 2
    field: np.ndarray[Any, np.dtype[np.float32]] = r2.ravel().astype(np.float32)
    return field


def run() -> vtkImageData:
    """Build the image, fill it through Tack, export back to VTK, and check it."""
    tack.set_default_device("cpu")
    image = vtkImageData(dimensions=DIMENSIONS)
    initial = vtkFloatArray(number_of_tuples=image.number_of_points)  # VTK allocates it
    initial.Fill(0.0)
    image.point_data.SetScalars(initial)  # attribute data has no settable scalars property
    values = vtk_to_array(initial)  # shares VTK's allocation; retains its owner
    radius_squared(values, DIMENSIONS[0], DIMENSIONS[1])
    result = array_to_vtk(values, name="radius_squared")  # shares the Tack field
    image.point_data.SetScalars(result)

    expected = expected_field()
    np.testing.assert_array_equal(np.asarray(initial), expected)
    np.testing.assert_array_equal(np.asarray(result), expected)
    # Nothing was copied: the two VTK arrays and the Tack array are one allocation.
    assert values.ptr == int(initial.GetPointer(0).split("_")[1], 16)
    assert np.asarray(result).__array_interface__["data"][0] == values.ptr
    # An edit through Tack shows in both VTK arrays.
    values.fill(123.0)
    assert np.asarray(initial)[0] == 123 and np.asarray(result)[0] == 123
    radius_squared(values, DIMENSIONS[0], DIMENSIONS[1])
    np.testing.assert_array_equal(np.asarray(result), expected)
    return image


def run_on_cuda(image: vtkImageData) -> str | None:
    """The kernel on a CUDA copy of the image's field, checked against NumPy, the
    result copied back into VTK's allocation. Returns the device's name, or None when
    Tack cannot open a CUDA device (then nothing is changed)."""
    try:
        device = tack.device("cuda")
    except tack.TackError:
        return None
    values = vtk_to_array(image.point_data["radius_squared"])
    on_gpu = values.to_device(device)  # a copy: VTK allocated host memory
    on_gpu.fill(-1.0)
    radius_squared(on_gpu, DIMENSIONS[0], DIMENSIONS[1])
    np.testing.assert_array_equal(on_gpu.numpy(), expected_field())
    values.fill(0.0)
    tack.copyto(values, on_gpu)  # device to host, into VTK's array
    np.testing.assert_array_equal(np.asarray(image.point_data["radius_squared"]),
                                  expected_field())
    return str(device)


def cuda_unavailable() -> str:
    """Why Tack cannot open a CUDA device."""
    try:
        tack.device("cuda")
    except tack.TackError as e:
        return str(e)
    return "it can"


def write_vti(image: vtkImageData, path: str) -> None:
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

    writer = vtkXMLImageDataWriter(file_name=path)
    writer.SetInputData(image)
    # Write(), not writer(image): the call returns None and only logs a failure.
    if writer.Write() != 1:
        raise RuntimeError(f"VTK could not write {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="write the updated VTK image as a .vti file")
    parser.add_argument("--png", help="render the image to this PNG (default: next to --output)")
    parser.add_argument("--require-cuda", action="store_true",
                        help="fail when no CUDA device is there (default: run on the CPU)")
    args = parser.parse_args(argv)
    image = run()
    on = run_on_cuda(image)
    if on is not None:
        print(f"CUDA: radius_squared on {on} matches NumPy and was copied back into VTK")
    elif args.require_cuda:
        raise SystemExit(f"VTK interop: --require-cuda, but no CUDA device: "
                         f"{cuda_unavailable()}")
    else:
        print(f"CUDA: not available ({cuda_unavailable()}); the example ran on the CPU only")
    vti_path = args.output
    png_path = args.png
    if png_path is None and vti_path:
        png_path = os.path.splitext(vti_path)[0] + ".png"
    if png_path and not vti_path:
        vti_path = os.path.splitext(png_path)[0] + ".vti"
    if vti_path:
        write_vti(image, vti_path)
        print(f"wrote {vti_path}")
    if png_path:
        how = write_png(vti_path, png_path)
        print(f"wrote {png_path} ({how})")
    print("VTK interop: check passed")


if __name__ == "__main__":
    main()
