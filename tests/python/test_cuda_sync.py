"""Synchronization on CUDA (docs/cuda.md, Synchronization), on the strict stand-in:
share() on export, shared buffers complete every fill and copy before returning,
tack.synchronize(), and sticky driver errors."""

from __future__ import annotations

import pytest
from cuda_helpers import run


def test_export_without_a_stream_waits_and_shares(tmp_path):
    run(
        """
        a = tack.zeros(16, dtype=tack.f32, device="cuda")
        a.fill(2)
        calls()
        cap = a.__dlpack__(stream=-1)           # no ordering: the host waits
        cs = names(calls())
        assert cs == ["cuStreamSynchronize"], cs
        calls()
        a.fill(5)                               # shared now: completes before return
        cs = names(calls())
        assert cs == ["cuMemsetD32Async", "cuStreamSynchronize"], cs
        """,
        tmp_path,
    )


def test_unshared_fill_returns_once_queued(tmp_path):
    run(
        """
        a = tack.zeros(16, dtype=tack.f32, device="cuda")
        calls()
        a.fill(5)
        assert names(calls()) == ["cuMemsetD32Async"]
        """,
        tmp_path,
    )


def test_copies_into_and_from_shared_buffers_complete_before_returning(tmp_path):
    run(
        """
        a = tack.zeros(16, dtype=tack.f32, device="cuda")
        b = tack.zeros(16, dtype=tack.f32, device="cuda")
        a.__cuda_array_interface__                 # shares a
        calls()
        tack.copyto(b, a)                          # reads a shared buffer
        assert names(calls()) == ["cuMemcpyDtoDAsync", "cuStreamSynchronize"]
        tack.copyto(a, b)                          # writes it
        assert names(calls()) == ["cuMemcpyDtoDAsync", "cuStreamSynchronize"]
        """,
        tmp_path,
    )


def test_wrapped_pointers_are_shared_from_birth(tmp_path):
    run(
        """
        tack.set_default_device("cuda")
        a = tack.zeros(16, dtype=tack.f32)
        w = tack.array_from_ptr(a.ptr, (16,), tack.f32, writable=True)
        calls()
        w.fill(1)
        assert names(calls()) == ["cuMemsetD32Async", "cuStreamSynchronize"]
        """,
        tmp_path,
    )


def test_synchronize_waits_for_tacks_stream(tmp_path):
    run(
        """
        tack.set_default_device("cuda")
        a = tack.zeros(4)
        a.fill(1)
        calls()
        tack.synchronize()
        tack.device("cuda").synchronize()
        s = tack_stream()
        cs = [c for c in calls() if c[0] == "cuStreamSynchronize"]
        assert len(cs) == 2 and all(f"stream={s:#x}" in c[1] for c in cs), cs
        """,
        tmp_path,
    )


def test_sticky_error_makes_the_device_unusable_with_a_clear_error(tmp_path):
    run(
        """
        a = tack.zeros(8, device="cuda")
        for attempt in range(3):
            try:
                if attempt == 0:
                    a.numpy()                  # the first sync meets the fault
                elif attempt == 1:
                    tack.zeros(8, device="cuda")
                else:
                    a.fill(1)
            except RuntimeError as e:
                assert "unusable" in str(e) and "700" in str(e), str(e)
            else:
                raise AssertionError(f"attempt {attempt} used a poisoned context")
        """,
        tmp_path,
        TACK_STANDIN_FAIL="cuStreamSynchronize:1:700",
    )


# Every error cuda.h documents as leaving the process "in an inconsistent state":
# an illegal address, a launch timeout, a device assert, a contained error, the
# hardware stack, illegal instruction, misaligned address, address space and PC
# errors, and a failed launch.
STICKY = [700, 702, 710, 226, 714, 715, 716, 717, 718, 719]


@pytest.mark.parametrize("code", STICKY)
def test_every_sticky_error_makes_the_device_unusable(tmp_path, code):
    run(
        f"""
        a = tack.zeros(8, device="cuda")
        for attempt in range(2):
            try:
                if attempt == 0:
                    a.numpy()                  # the first sync meets the fault
                else:
                    tack.zeros(8, device="cuda")
            except RuntimeError as e:
                assert "unusable" in str(e) and "({code})" in str(e), str(e)
            else:
                raise AssertionError(f"attempt {{attempt}} used a poisoned context")
        """,
        tmp_path,
        TACK_STANDIN_FAIL=f"cuStreamSynchronize:1:{code}",
    )


@pytest.mark.parametrize("code", [701, 712, 713])
def test_other_launch_and_host_memory_errors_are_not_sticky(tmp_path, code):
    run(
        f"""
        a = tack.zeros(8, device="cuda")
        try:
            a.numpy()
        except RuntimeError as e:
            assert "unusable" not in str(e) and "({code})" in str(e), str(e)
        else:
            raise AssertionError("the injected failure was not reported")
        assert (a.numpy() == 0).all()          # the device still works
        """,
        tmp_path,
        TACK_STANDIN_FAIL=f"cuStreamSynchronize:1:{code}",
    )


def test_ordinary_driver_errors_are_runtime_errors_naming_the_call(tmp_path):
    run(
        """
        a = tack.zeros(8, device="cuda")
        try:
            a.numpy()
        except RuntimeError as e:
            assert "cuMemcpyDtoHAsync" in str(e), str(e)
        else:
            raise AssertionError("the injected failure was not reported")
        assert (a.numpy() == 0).all()          # not sticky: the device still works
        """,
        tmp_path,
        TACK_STANDIN_FAIL="cuMemcpyDtoHAsync:1:1",
    )
