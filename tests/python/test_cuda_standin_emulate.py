"""The stand-in driver running a kernel's generated CUDA module itself
(TACK_STANDIN_EXEC=emulate, docs/cuda.md): the module's source compiled for the host
with cuda_emulation.hpp and launched with the grid, block, dynamic shared memory and
parameters Tack chose, over the stand-in's device memory.

Each case runs in a child interpreter (cuda_helpers.run). Cases that break the module
on purpose patch the CUDA emitter in the child, so NVRTC and the emulation both see
the broken source while the CPU twin (the C build) stays right: what a launch then
computes shows which of them ran.
"""

from __future__ import annotations

import shutil
import textwrap

import pytest
from cuda_helpers import run, standin_for_kernels

pytestmark = pytest.mark.skipif(shutil.which("g++") is None,
                                reason="no g++ to compile CUDA modules")

KERNELS = '''
import importlib

import numpy as np

import tack

emit_cuda = importlib.import_module("tack.kernel.emit_cuda")  # tack.kernel: the decorator

_emit = emit_cuda.emit_cuda


def mutate(old, new):
    """Every CUDA module built from now on has `old` replaced by `new`."""
    def emit(plan):
        k = _emit(plan)
        assert old in k.source, old
        k.source = k.source.replace(old, new)
        return k
    emit_cuda.emit_cuda = emit


@tack.kernel
def scale(out, x, a):
    for i in range(out.shape[0]):
        out[i] = a * x[i]


def attempt(launch):
    """Runs launch() and waits for the device: prints the RuntimeError raised."""
    try:
        launch()
        tack.device("cuda").synchronize()
    except RuntimeError as e:
        print("raised:", e)
'''


def _run(tmp_path, body: str, check: bool = True, **env: str):
    standin_for_kernels()  # skips without NVRTC
    env.setdefault("TACK_STANDIN_EXEC", "emulate")
    env.setdefault("TACK_STANDIN_EMULATE_CACHE", str(tmp_path / "emulated"))
    (tmp_path / "kemu.py").write_text(KERNELS)
    head = (f"sys.path.insert(0, {str(tmp_path)!r})\nfrom kemu import attempt, mutate, scale\n"
            "from test_kernels_reductions import total\n"
            "x = tack.array(np.arange(1.0, 3001.0)).to_device('cuda')\n"
            "out = tack.zeros(3000, dtype=tack.f64, device='cuda')\n")
    return run(head + textwrap.dedent(body), tmp_path, check=check, **env)


def _log(tmp_path) -> str:
    return (tmp_path / "driver.log").read_text()


def test_a_launch_runs_the_module_with_the_geometry_tack_chose(tmp_path):
    _run(tmp_path, '''
        scale(out, x, 2.0)
        assert (out.numpy() == 2.0 * np.arange(1.0, 3001.0)).all()
        assert total(x) == np.arange(1.0, 3001.0).sum()
        launches = [c[1] for c in calls() if c[0] == "cuLaunchKernel"]
        assert "grid=3x1x1, block=1024x1x1, shared=0" in launches[0], launches
        # the reduction: 8 bytes of dynamic shared memory per thread, then the finish
        assert "block=1024x1x1, shared=8192" in launches[1], launches
        assert "fn=tack_kernel_finish, grid=1x1x1, block=1x1x1" in launches[2], launches
    ''')
    assert "tack_standin_cuda_module_source(module=" in _log(tmp_path)


SKIP_TRIP_0 = '''
    mutate("blockDim.x + threadIdx.x;", "blockDim.x + threadIdx.x + 1;")
    scale(out, x, 2.0)
    got = out.numpy()
    print("skipped", np.flatnonzero(got != 2.0 * np.arange(1.0, 3001.0)).tolist())
'''


def test_the_module_computes_and_the_twin_mode_ignores_it(tmp_path):
    # every thread of the broken module starts one trip late: trip 0 never runs and
    # out[0] keeps its zero; the twin (the C build) computes every trip
    r = _run(tmp_path, SKIP_TRIP_0)
    assert "skipped [0]" in r.stdout, r.stdout + r.stderr
    r = _run(tmp_path, SKIP_TRIP_0, TACK_STANDIN_EXEC="twin")
    assert "skipped []" in r.stdout, r.stdout + r.stderr


FAULTS = {
    # every trip reads 16 Mi elements past its own: far outside any allocation
    "outside-the-memory": ("v_i = tk_add(tk_start, tk_k);",
                           "v_i = tk_add(tk_start, tk_k) + (1LL << 24);",
                           "scale(out, x, 2.0)", "fault: signal 11"),
    # the block's partials written 48 KiB further on: past the 8 KiB the launch asked
    # for, and past anything a block may have
    "past-the-shared-memory": ("tk_sh[tk_t] = tk_mine;", "tk_sh[tk_t + 6144] = tk_mine;",
                               "total(x)", "fault: signal 11"),
    # a thread that never finishes (the time limit set to 2 s below)
    "never-ending": ("(void)tk_out;", "(void)tk_out; for (volatile int tk_spin = 1; tk_spin;) {}",
                     "scale(out, x, 2.0)", "still running after the time limit"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_a_broken_module_is_a_sticky_device_fault(tmp_path, case):
    old, new, launch, logged = FAULTS[case]
    r = _run(tmp_path, f'''
        mutate({old!r}, {new!r})
        attempt(lambda: {launch})
        attempt(lambda: tack.zeros(3, device="cuda").numpy())
    ''', TACK_STANDIN_EMULATE_TIMEOUT="2" if case == "never-ending" else "")
    raised = r.stdout.split("raised:")
    assert len(raised) == 3, r.stdout + r.stderr  # the launch, then everything after
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in raised[2] and "unusable" in raised[2]
    assert "emulate(fn=tack_kernel_body" in _log(tmp_path)
    assert logged in _log(tmp_path)


def test_a_module_the_host_compiler_rejects_is_not_run(tmp_path):
    # __ldg is CUDA's (NVRTC compiles it) but the emulation does not spell it: the
    # launch is refused, never run by a twin instead
    r = _run(tmp_path, '''
        mutate("(void)tk_out;", "(void)tk_out; (void)__ldg(&tk_p.a1_n[0]);")
        attempt(lambda: scale(out, x, 2.0))
    ''')
    assert "raised:" in r.stdout and "cuLaunchKernel" in r.stdout, r.stdout + r.stderr
    assert "did not compile for emulation" in r.stderr
    assert "cuLaunchKernel(fn=tack_kernel_body" in _log(tmp_path)
    assert "-> 801" in _log(tmp_path)


def test_an_unknown_exec_mode_makes_the_driver_unusable(tmp_path):
    r = _run(tmp_path, "", check=False, TACK_STANDIN_EXEC="emulated")
    assert r.returncode != 0
    assert "DeviceUnavailableError" in r.stderr or "cuInit" in r.stderr, r.stderr
