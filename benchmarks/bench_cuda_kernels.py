"""The kernel section of bench_cuda.py: @tack.kernel on CUDA arrays beside its peers.

- SAXPY (out = a*x + y) and radius_squared (a write of every element) over 2**log2n
  float32, as effective bandwidth (bytes the kernel must move / time) and as a share of
  the device-to-device copy measured in the same run; a copy moves each byte twice (a
  read and a write), so its traffic is twice the bytes copied. The goal is >= 90 %.
- the 7-point stencil on a cube of about 2**log2n float32, one thread per point, beside
  the same kernel as a CuPy RawKernel and as PyTorch slicing arithmetic;
- a float32 sum (a reduction returning a float) beside torch.sum;
- launch overhead: ns per launch of a kernel over one element, the device synchronized
  once after all launches, beside a CuPy RawKernel, an in-place PyTorch add and a
  Numba-CUDA kernel;
- build: the first launch of a new kernel in a fresh process with an empty
  TACK_CACHE_DIR (front end, C twin, NVRTC, module load) beside the same in a second
  process that finds both images in the cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_kernels import radius_squared  # the CPU benchmark's kernels, same folder
from bench_nvrtc import total

import tack


@tack.kernel
def saxpy(out, a, x, y):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@tack.kernel
def stencil7(u, out):
    # one trip per point (a parallel loop over the first axis alone would give the
    # GPU only a few hundred threads)
    for p in range(u.shape[0] * u.shape[1] * u.shape[2]):
        i = p // (u.shape[1] * u.shape[2])
        j = (p // u.shape[2]) % u.shape[1]
        k = p % u.shape[2]
        if 0 < i < u.shape[0] - 1 and 0 < j < u.shape[1] - 1 and 0 < k < u.shape[2] - 1:
            out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                            + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                            - tack.f32(6.0) * u[i, j, k])


@tack.kernel
def bump(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + 1.0


CUPY_STENCIL = r"""
extern "C" __global__ void stencil7(const float *u, float *out, long long n0,
                                    long long n1, long long n2) {
    long long total = n0 * n1 * n2;
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < total;
         p += (long long)blockDim.x * gridDim.x) {
        long long i = p / (n1 * n2), j = (p / n2) % n1, k = p % n2;
        if (i > 0 && i < n0 - 1 && j > 0 && j < n1 - 1 && k > 0 && k < n2 - 1) {
            out[p] = u[p - n1 * n2] + u[p + n1 * n2] + u[p - n2] + u[p + n2]
                     + u[p - 1] + u[p + 1] - 6.0f * u[p];
        }
    }
}
"""
CUPY_BUMP = r'extern "C" __global__ void bump(float *a) { a[0] += 1.0f; }'

# The child that times a kernel's first launch (TACK_CACHE_DIR chosen by the parent).
BUILD_CHILD = textwrap.dedent("""
    import time
    import tack

    @tack.kernel
    def scaled_copy(out, x):
        for i in range(out.shape[0]):
            out[i] = x[i] * 3.0 + 1.0

    dev = tack.device("cuda")
    x = tack.zeros(1024, dtype=tack.f32, device=dev)
    out = tack.zeros(1024, dtype=tack.f32, device=dev)
    dev.synchronize()
    t0 = time.perf_counter()
    scaled_copy(out, x)
    dev.synchronize()
    print(time.perf_counter() - t0)
    assert out.numpy()[0] == 1.0
""")


def _first_launch_s(cache: str) -> float:
    env = dict(os.environ, TACK_CACHE_DIR=cache)
    script = os.path.join(cache, "first_launch.py")  # kernels live in files
    with open(script, "w", encoding="utf-8") as f:
        f.write(BUILD_CHILD)
    done = subprocess.run([sys.executable, script], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the build child failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.split()[-1])


def _cube(log2n: int) -> tuple[int, int, int]:
    side = max(4, round(2 ** (log2n / 3)))
    return side, side, side


def run_kernels(args: Any, dev: Any, sync: Callable[[], None], torch: Any, cupy: Any,
                d2d_gbs: float, row: Callable[..., None], error: Callable[..., None],
                best_s: Callable[..., float], per_call_ns: Callable[..., float]) -> None:
    """Runs every kernel case, printing and recording rows through row()/error()."""
    n = 1 << args.log2n
    gb = 1e9

    def guarded(name: str, case: Callable[[], None]) -> None:
        try:
            case()
        except Exception as e:
            error("kernels", name, e)

    # ---- bandwidth-bound kernels against the copy ----------------------------------
    def streaming() -> None:
        x = tack.full((n,), 1.5, dtype=tack.f32, device=dev)
        y = tack.full((n,), 0.25, dtype=tack.f32, device=dev)
        out = tack.empty((n,), dtype=tack.f32, device=dev)
        a = np.float32(2.0)
        saxpy(out, a, x, y)  # the build and the module load happen here, untimed
        sync()
        assert out[n - 1] == np.float32(3.25)
        copy_traffic = 2 * d2d_gbs  # GB/s read + written by the copy
        t = best_s(lambda: saxpy(out, a, x, y), args.repeat, sync)
        gbs = 3 * 4 * n / t / gb
        row(f"saxpy 2**{args.log2n} f32, GB/s moved", gbs, copy_traffic, "GB/s",
            "device-to-device copy", group="kernels", ratio=copy_traffic / gbs,
            note=f"{100 * gbs / copy_traffic:.0f} % of the copy")
        nx, ny = 1024, 1024
        radius_squared(out, nx, ny)
        sync()
        t = best_s(lambda: radius_squared(out, nx, ny), args.repeat, sync)
        gbs = 4 * n / t / gb
        row(f"radius_squared 2**{args.log2n} f32, GB/s", gbs, copy_traffic, "GB/s",
            "device-to-device copy", group="kernels", ratio=copy_traffic / gbs,
            note=f"{100 * gbs / copy_traffic:.0f} % of the copy")

    guarded("saxpy / radius_squared", streaming)

    def beside(label: str, ours: float, unit: str, peer: str,
               measure: Callable[[], float] | None) -> None:
        """One row of Tack beside a peer; a missing peer (measure None) or one that
        fails is said in the row, never an error of the benchmark."""
        if measure is None:
            row(label, ours, None, unit, peer, group="kernels")
            return
        try:
            theirs = measure()
        except Exception as e:
            row(label, ours, None, unit, "", group="kernels",
                note=f"({peer} failed: {type(e).__name__}: {e})")
            return
        row(label, ours, theirs, unit, peer, group="kernels")

    def cupy_sync() -> None:
        sync()
        cupy.cuda.Device().synchronize()

    # ---- the 7-point stencil ---------------------------------------------------------
    def stencil() -> None:
        shape = _cube(args.log2n)
        host = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
        u = tack.array(host, device=dev)
        out = tack.zeros(shape, dtype=tack.f32, device=dev)
        stencil7(u, out)
        sync()
        ours = best_s(lambda: stencil7(u, out), args.repeat, sync) * 1e3
        label = f"stencil7 {shape[0]}^3 f32, ms"

        def cupy_ms() -> float:
            kern = cupy.RawKernel(CUPY_STENCIL, "stencil7")
            cu_u = cupy.asarray(host)
            cu_out = cupy.zeros(shape, dtype=cupy.float32)
            blocks = min((host.size + 255) // 256, 65535)

            def launch() -> None:
                kern((blocks,), (256,), (cu_u, cu_out, *shape))

            launch()
            cupy_sync()
            # the same computation (Tack's is checked beside CuPy's)
            np.testing.assert_allclose(out.numpy(), cupy.asnumpy(cu_out), rtol=1e-5,
                                       atol=1e-5)
            return best_s(launch, args.repeat, cupy_sync) * 1e3

        def torch_ms() -> float:
            t_u = torch.from_numpy(host).cuda()
            t_out = torch.zeros_like(t_u)

            def torch_stencil() -> None:
                t_out[1:-1, 1:-1, 1:-1] = (
                    t_u[:-2, 1:-1, 1:-1] + t_u[2:, 1:-1, 1:-1] + t_u[1:-1, :-2, 1:-1]
                    + t_u[1:-1, 2:, 1:-1] + t_u[1:-1, 1:-1, :-2] + t_u[1:-1, 1:-1, 2:]
                    - 6.0 * t_u[1:-1, 1:-1, 1:-1])

            torch_stencil()
            return best_s(torch_stencil, args.repeat, sync) * 1e3

        beside(label, ours, "ms", "CuPy RawKernel", cupy_ms if cupy else None)
        beside(label, ours, "ms", "PyTorch slicing", torch_ms if torch else None)

    guarded("stencil7", stencil)

    # ---- a reduction -----------------------------------------------------------------
    def reduction() -> None:
        host = np.random.default_rng(6).random(n, dtype=np.float32)
        x = tack.array(host, device=dev)
        got = total(x)
        assert abs(got - float(host.sum(dtype=np.float64))) <= 1e-6 * n
        ours = best_s(lambda: total(x), args.repeat, sync) * 1e3

        def torch_ms() -> float:
            t = torch.from_numpy(host).cuda()
            torch.sum(t)
            return best_s(lambda: torch.sum(t), args.repeat, sync) * 1e3

        beside(f"sum 2**{args.log2n} f32 (returns a float), ms", ours, "ms", "torch.sum",
               torch_ms if torch else None)

    guarded("sum", reduction)

    # ---- launch overhead -------------------------------------------------------------
    def overhead() -> None:
        a = tack.zeros(1, dtype=tack.f32, device=dev)
        bump(a)
        sync()
        ours = per_call_ns(lambda: bump(a), args.calls, args.repeat, sync)
        assert a[0] == 1 + args.calls * args.repeat
        label = "launch, 1-element kernel, ns"

        def cupy_ns() -> float:
            kern = cupy.RawKernel(CUPY_BUMP, "bump")
            c = cupy.zeros(1, dtype=cupy.float32)
            kern((1,), (1,), (c,))
            return per_call_ns(lambda: kern((1,), (1,), (c,)), args.calls, args.repeat,
                               cupy_sync)

        def torch_ns() -> float:
            t = torch.zeros(1, device="cuda")
            return per_call_ns(lambda: t.add_(1.0), args.calls, args.repeat, sync)

        numba_cuda = _numba_cuda()

        def numba_ns() -> float:
            @numba_cuda.jit
            def nb_bump(arr):  # type: ignore[no-untyped-def]
                arr[0] += 1.0

            d = numba_cuda.to_device(np.zeros(1, dtype=np.float32))
            nb_bump[1, 1](d)

            def numba_sync() -> None:
                sync()
                numba_cuda.synchronize()

            return per_call_ns(lambda: nb_bump[1, 1](d), args.calls, args.repeat,
                               numba_sync)

        beside(label, ours, "ns", "CuPy RawKernel", cupy_ns if cupy else None)
        beside(label, ours, "ns", "PyTorch add_", torch_ns if torch else None)
        beside(label, ours, "ns", "Numba-CUDA", numba_ns if numba_cuda else None)

    guarded("launch overhead", overhead)

    # ---- cold build and warm cache -------------------------------------------------------
    def build() -> None:
        with tempfile.TemporaryDirectory(prefix="tack-bench-cache-") as cache:
            cold = _first_launch_s(cache) * 1e3
            warm = _first_launch_s(cache) * 1e3
        row("first launch, empty cache (NVRTC), ms", cold, None, "ms", "",
            group="kernels")
        row("first launch, warm cache, ms", warm, cold, "ms", "the cold build",
            group="kernels", note="(ratio: warm / cold)")

    guarded("build", build)


def _numba_cuda() -> Any:
    try:
        from numba import cuda

        return cuda if cuda.is_available() else None
    except Exception:
        return None
