"""The CUDA driver and context (docs/cuda.md), against the strict stand-in driver and
NVIDIA's stub library: which library is opened, how entry points are resolved, the
errors for a missing, stub or deviceless driver, and which context Tack works in."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cuda_helpers import run, standin_library, stub_driver


def test_repr_names_the_driver_library(tmp_path):
    run(
        f"""
        d = tack.device("cuda")
        assert repr(d).startswith("tack.device('cuda', 0)"), repr(d)
        assert {str(standin_library())!r} in repr(d), repr(d)
        assert "driver" not in repr(tack.device("cpu"))
        """,
        tmp_path,
    )


def test_entry_points_come_from_cuGetProcAddress_at_pinned_versions(tmp_path):
    run(
        """
        tack.device("cuda")
        cs = calls()
        resolved = [c for c in cs if c[0] == "cuGetProcAddress"]
        # Every entry point Tack calls was resolved first, with legacy stream flags.
        got = {re.match(r"(\\w+),", c[1]).group(1) for c in resolved}
        used = {c[0] for c in cs if c[0] != "cuGetProcAddress"}
        assert used <= got, used - got
        assert all("flags=1" in c[1] and c[2] == 0 for c in resolved
                   if not c[1].startswith("cuCtxCreate")), resolved
        assert "version=11020" in next(c[1] for c in resolved
                                       if c[1].startswith("cuMemAllocAsync,"))
        """,
        tmp_path,
    )


def test_missing_driver_is_runtime_error_naming_the_library(tmp_path):
    run(
        """
        try:
            tack.device("cuda")
        except RuntimeError as e:
            assert isinstance(e, tack.TackError)
            assert "/nonexistent/libcuda.so.1" in str(e), str(e)
        else:
            raise AssertionError("opened a missing driver")
        """,
        tmp_path,
        driver="/nonexistent/libcuda.so.1",
    )


def _loads(library: str, **env: str) -> bool:
    """Whether dlopen finds `library` in a child process with `env`."""
    code = f"import ctypes; ctypes.CDLL({library!r})"
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                          capture_output=True, check=False).returncode == 0


def test_stub_library_on_the_path_is_never_loaded(tmp_path):
    stub = stub_driver()
    if stub is None:
        pytest.skip("no CUDA toolkit with lib64/stubs/libcuda.so here")
    if _loads("libcuda.so.1", LD_LIBRARY_PATH=str(stub.parent)):
        # a driver installed on the host: the loader finds its libcuda.so.1 after the
        # stub directory, and the device opens, as it should
        pytest.skip("this host has a libcuda.so.1 of its own")
    # Build images put lib64/stubs on LD_LIBRARY_PATH: only libcuda.so.1 is tried,
    # which the stub directory does not have.
    run(
        """
        try:
            tack.device("cuda")
        except RuntimeError as e:
            assert "libcuda.so.1" in str(e) and "none was found" in str(e), str(e)
            assert "tried libcuda.so.1" in str(e), str(e)
            assert ", libcuda.so" not in str(e), str(e)   # the only candidate
        else:
            raise AssertionError("a CUDA device opened on the stub")
        """,
        tmp_path,
        driver="",
        LD_LIBRARY_PATH=str(stub.parent),
    )


def test_stub_library_chosen_explicitly_is_error_34_naming_it(tmp_path):
    stub = stub_driver()
    if stub is None:
        pytest.skip("no CUDA toolkit with lib64/stubs/libcuda.so here")
    run(
        f"""
        try:
            tack.device("cuda")
        except RuntimeError as e:
            assert "stub" in str(e) and "34" in str(e), str(e)
            assert {str(stub)!r} in str(e), str(e)
        else:
            raise AssertionError("a CUDA device opened on the stub")
        """,
        tmp_path,
        driver=str(stub),
    )


def test_no_device_is_runtime_error_naming_the_library(tmp_path):
    run(
        f"""
        for attempt in range(2):  # the failure is not cached as success
            try:
                tack.device("cuda")
            except RuntimeError as e:
                assert "no CUDA device" in str(e), str(e)
                assert {str(standin_library())!r} in str(e), str(e)
            else:
                raise AssertionError("opened a device on a driver without devices")
        """,
        tmp_path,
        TACK_STANDIN_DEVICES="0",
    )


def test_driver_older_than_cuda_12_is_runtime_error_naming_it(tmp_path):
    run(
        f"""
        try:
            tack.device("cuda")
        except RuntimeError as e:
            assert isinstance(e, tack.DeviceUnavailableError), type(e)
            assert "11.8" in str(e) and "12.0" in str(e), str(e)
            assert {str(standin_library())!r} in str(e), str(e)
        else:
            raise AssertionError("opened a device on a CUDA 11.8 driver")
        """,
        tmp_path,
        TACK_STANDIN_DRIVER_VERSION="11080",
    )


def test_ordinal_out_of_range_is_value_error(tmp_path):
    run(
        """
        try:
            tack.device("cuda", 1)
        except ValueError as e:
            assert "0..0" in str(e), str(e)
        else:
            raise AssertionError("opened cuda:1 on a one-device driver")
        """,
        tmp_path,
    )


def test_primary_context_is_retained_once_and_never_released(tmp_path):
    run(
        """
        a = tack.zeros(4, device="cuda")
        b = tack.zeros(4, device="cuda")
        del a, b
        tack.synchronize()
        cs = calls()
        assert [c[0] for c in cs].count("cuDevicePrimaryCtxRetain") == 1
        assert "cuDevicePrimaryCtxRelease" not in [c[0] for c in cs]
        assert tack.device("cuda").memory_domain == 1
        """,
        tmp_path,
    )


def test_current_context_of_the_device_is_adopted_as_its_own_domain(tmp_path):
    lib = standin_library()
    run(
        f"""
        import ctypes
        drv = ctypes.CDLL({str(lib)!r})
        assert drv.cuInit(0) == 0
        ctx = ctypes.c_void_p()
        assert drv.cuCtxCreate_v4(ctypes.byref(ctx), None, 0, 0) == 0
        # cuCtxCreate made it current on this thread: Tack adopts it.
        a = tack.array(np.arange(5, dtype=np.float32), device="cuda")
        assert (a.numpy() == np.arange(5)).all()
        dev = tack.device("cuda")
        assert dev.memory_domain != 1, dev.memory_domain
        attr = ctypes.c_void_p()
        # CU_POINTER_ATTRIBUTE_CONTEXT: the array lives in the adopted context.
        assert drv.cuPointerGetAttribute(ctypes.byref(attr), 1,
                                         ctypes.c_ulonglong(a.ptr)) == 0
        assert attr.value == ctx.value
        """,
        tmp_path,
    )


def test_a_current_context_of_another_device_is_not_adopted(tmp_path):
    lib = standin_library()
    run(
        f"""
        import ctypes
        drv = ctypes.CDLL({str(lib)!r})
        assert drv.cuInit(0) == 0
        prim = [ctypes.c_void_p(), ctypes.c_void_p()]
        for k in (0, 1):
            assert drv.cuDevicePrimaryCtxRetain(ctypes.byref(prim[k]), k) == 0
        # cuda:1's primary context is current (as the CUDA runtime leaves it after
        # cudaSetDevice(1)): cuda:0 still works in its own primary context.
        assert drv.cuCtxSetCurrent(prim[1]) == 0
        a = tack.zeros(4, device="cuda:0")
        assert tack.device("cuda:0").memory_domain == 1
        owner = ctypes.c_void_p()
        assert drv.cuPointerGetAttribute(ctypes.byref(owner), 1,
                                         ctypes.c_ulonglong(a.ptr)) == 0
        assert owner.value == prim[0].value
        cur = ctypes.c_void_p()
        assert drv.cuCtxGetCurrent(ctypes.byref(cur)) == 0
        assert cur.value == prim[1].value  # the caller's context is left current
        # A device's own primary context, current, is the primary context: one domain.
        b = tack.zeros(4, device="cuda:1")
        assert tack.device("cuda:1").memory_domain == 2
        assert drv.cuPointerGetAttribute(ctypes.byref(owner), 1,
                                         ctypes.c_ulonglong(b.ptr)) == 0
        assert owner.value == prim[1].value
        """,
        tmp_path,
        TACK_STANDIN_DEVICES="2",
    )


def test_another_threads_context_is_restored_after_each_call(tmp_path):
    lib = standin_library()
    run(
        f"""
        import ctypes, threading
        a = tack.zeros(8, device="cuda")  # the primary context
        drv = ctypes.CDLL({str(lib)!r})
        errors = []
        def worker():
            ctx = ctypes.c_void_p()
            assert drv.cuCtxCreate_v4(ctypes.byref(ctx), None, 0, 0) == 0
            a.fill(3)
            assert (a.numpy() == 3).all()
            cur = ctypes.c_void_p()
            assert drv.cuCtxGetCurrent(ctypes.byref(cur)) == 0
            if cur.value != ctx.value:
                errors.append("Tack left its context current on a host thread")
        t = threading.Thread(target=worker)
        t.start(); t.join()
        assert not errors, errors
        """,
        tmp_path,
    )
