"""Made-up CUDA stream handles. The driver dereferences a stream handle, so a value
that cannot be one (in the first page, misaligned, beyond user space) is refused
before any driver call; a plausible value of no stream reaches the stand-in, which
answers CUDA_ERROR_INVALID_HANDLE for any handle it did not create."""

from __future__ import annotations

from cuda_helpers import FOREIGN_STREAM, run

FORGED = "(3, 4095, 0x10001, 2**60)"


def test_impossible_handles_never_reach_the_driver(tmp_path):
    run(
        FOREIGN_STREAM
        + f"""
        a = tack.array(np.arange(4, dtype=np.float32), device="cuda")
        class Obj:
            def __init__(self, d):
                self.__cuda_array_interface__ = d
        d = dict(a.__cuda_array_interface__)
        uses = (
            lambda s: a.to_device("cuda", stream=s),
            lambda s: a.__dlpack__(stream=s),
            lambda s: tack.from_dlpack(Obj(dict(d, stream=s))),
        )
        for s in {FORGED}:
            for use in uses:
                calls()
                try:
                    use(s)
                except ValueError as e:
                    assert isinstance(e, BufferError), e
                    assert f"stream {{s:#x}} is no CUDA stream handle" in str(e), e
                else:
                    raise AssertionError(hex(s))
                cs = calls()
                assert not [c for c in cs if f"stream={{s:#x}}" in c[1]], cs
        # The known handles still work: the special ones, Tack's own, another
        # library's.
        for s in (1, 2, tack_stream(), foreign_stream()):
            a.to_device("cuda", stream=s)
            a.__dlpack__(stream=s)
        """,
        tmp_path,
    )


def test_a_plausible_handle_of_no_stream_is_the_drivers_invalid_handle(tmp_path):
    run(
        """
        a = tack.array(np.arange(4, dtype=np.float32), device="cuda")
        fake = 0x7F0000001000
        try:
            a.to_device("cuda", stream=fake)
        except RuntimeError as e:
            assert "CUDA_ERROR_INVALID_HANDLE" in str(e), e
        else:
            raise AssertionError("the stand-in accepted a stream it never made")
        assert [c for c in calls() if f"stream={fake:#x}" in c[1] and c[2] == 400]
        """,
        tmp_path,
    )
