"""export_memory on CUDA (docs/cuda.md, Exporting memory as a file descriptor), on the
strict stand-in, whose exported descriptor is a real memfd holding the allocation's
bytes: so the tests read what another process would import."""

from __future__ import annotations

from cuda_helpers import run

_READ_FD = """
        import mmap
        def read_fd(fd, nbytes, dtype):
            with mmap.mmap(fd, nbytes, prot=mmap.PROT_READ) as m:
                return np.frombuffer(m[:nbytes], dtype=dtype).copy()
"""


def test_exportable_array_is_exported_in_place_as_a_cached_fd(tmp_path):
    run(
        _READ_FD
        + """
        a = tack.empty((1000,), dtype=tack.f32, device="cuda", exportable=True)
        cs = [c for c in calls() if c[0] in ("cuMemCreate", "cuMemAddressReserve",
                                              "cuMemMap", "cuMemSetAccess")]
        assert [c[0] for c in cs] == ["cuMemCreate", "cuMemAddressReserve",
                                      "cuMemMap", "cuMemSetAccess"], cs
        assert all(c[2] == 0 for c in cs)
        a.fill(2.5)
        m = a.export_memory()
        assert isinstance(m, tack.ExportedMemory)
        assert m.backend == "cuda" and m.handle_type == "posix_fd"
        assert m.size == 4000 and m.allocation_size == 2 << 20
        assert len(m.device_uuid) == 16
        os.fstat(m.handle)                             # a real descriptor
        assert (read_fd(m.handle, 4000, np.float32) == 2.5).all()  # waited for fill
        assert a.export_memory().handle == m.handle    # created once
        exports = [c for c in calls() if c[0] == "cuMemExportToShareableHandle"]
        assert len(exports) == 1, exports
        a.fill(7)                                      # shared: completes at once
        assert (read_fd(m.handle, 4000, np.float32) == 7).all()  # same memory
        del a
        try:
            os.fstat(m.handle)
        except OSError:
            pass
        else:
            raise AssertionError("the descriptor outlived the buffer")
        ns = names(calls())
        assert ns[-3:] == ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"], ns
        """,
        tmp_path,
    )


def test_ordinary_array_exports_a_one_time_device_copy(tmp_path):
    run(
        _READ_FD
        + """
        a = tack.array(np.arange(10, dtype=np.int32), device="cuda")
        calls()
        m = a.export_memory()
        ns = names(calls())
        assert "cuMemcpyDtoDAsync" in ns and "cuMemcpyDtoHAsync" not in ns, ns
        assert m.size == 40 and m.allocation_size % (2 << 20) == 0
        assert (read_fd(m.handle, 40, np.int32) == np.arange(10)).all()
        a.fill(-1)                              # later writes are not reflected
        a.numpy()
        assert (read_fd(m.handle, 40, np.int32) == np.arange(10)).all()
        assert a.export_memory().handle == m.handle   # the copy is made once
        assert (a.numpy() == -1).all()
        """,
        tmp_path,
    )


def test_zero_size_exportable_array(tmp_path):
    run(
        """
        a = tack.empty((0,), dtype=tack.f32, device="cuda", exportable=True)
        m = a.export_memory()
        assert m.size == 0 and m.allocation_size == 2 << 20
        """,
        tmp_path,
    )


def test_cpu_arrays_refuse_export_memory(tmp_path):
    run(
        """
        tack.zeros(1, device="cuda")
        for a in (tack.zeros(4), tack.empty(4, exportable=True)):
            try:
                a.export_memory()
            except RuntimeError as e:
                assert "cpu" in str(e)
            else:
                raise AssertionError("a CPU array was exported")
        """,
        tmp_path,
    )


def test_exportable_allocation_failure_undoes_what_was_made(tmp_path):
    run(
        """
        try:
            tack.empty(10, device="cuda", exportable=True)
        except RuntimeError:
            pass
        else:
            raise AssertionError("the injected failure was not reported")
        ns = names(calls())
        assert ns[-2:] == ["cuMemAddressFree", "cuMemRelease"], ns
        a = tack.empty(10, device="cuda", exportable=True)
        assert a.export_memory().allocation_size == 2 << 20
        """,
        tmp_path,
        TACK_STANDIN_FAIL="cuMemMap:1:1",
    )
