"""__cuda_array_interface__ version 3 (docs/cuda.md), both ways, on the strict
stand-in. CuPy and Numba themselves are in test_cuda_peers.py."""

from __future__ import annotations

from cuda_helpers import run


def test_export_shares_first_and_has_no_stream_key(tmp_path):
    run(
        """
        a = tack.zeros((3, 4), dtype=tack.f64, device="cuda")
        a.fill(1)
        calls()
        d = a.__cuda_array_interface__
        assert names(calls()) == ["cuStreamSynchronize"]
        assert d == {"shape": (3, 4), "typestr": "<f8", "data": (a.ptr, False),
                     "strides": None, "version": 3}, d
        calls()
        a.fill(2)                                  # shared: completes before return
        assert names(calls())[-1] == "cuStreamSynchronize"
        v = tack.zeros(5, dtype=tack.vec3, device="cuda").__cuda_array_interface__
        assert v["shape"] == (5, 3) and v["typestr"] == "<f4"
        """,
        tmp_path,
    )


def test_read_only_arrays_say_so(tmp_path):
    run(
        """
        tack.set_default_device("cuda")
        a = tack.zeros(4)
        r = tack.array_from_ptr(a.ptr, (4,), tack.f32)        # read-only
        assert r.__cuda_array_interface__["data"] == (a.ptr, True)
        """,
        tmp_path,
    )


def test_cpu_arrays_have_no_interface(tmp_path):
    run(
        """
        a = tack.zeros(4)
        assert not hasattr(a, "__cuda_array_interface__")
        """,
        tmp_path,
    )


def test_import_of_an_interface_only_object(tmp_path):
    run(
        """
        a = tack.array(np.arange(6, dtype=np.int16).reshape(2, 3), device="cuda")
        class Obj:
            def __init__(self, d):
                self.__cuda_array_interface__ = d
        d = dict(a.__cuda_array_interface__)
        o = Obj(d)
        b = tack.from_dlpack(o)
        assert b.ptr == a.ptr and b.shape == (2, 3) and b.dtype == tack.i16
        assert b.writable and (b.numpy() == np.arange(6).reshape(2, 3)).all()
        import sys as _s
        before = _s.getrefcount(o)
        del b
        assert _s.getrefcount(o) == before - 1            # released with the array
        ro = tack.from_dlpack(Obj(dict(d, data=(a.ptr, True))))
        assert not ro.writable
        c = tack.from_dlpack(Obj(dict(d, strides=(6, 2), version=2)))
        assert c.ptr == a.ptr
        calls()
        tack.from_dlpack(Obj(dict(d, stream=2)))          # producer's stream
        cs = calls()
        rec = [x for x in cs if x[0] == "cuEventRecord"]
        wait = [x for x in cs if x[0] == "cuStreamWaitEvent"]
        assert rec and "stream=0x2" in rec[0][1], cs
        assert wait and f"stream={tack_stream():#x}" in wait[0][1], cs
        assert "cuStreamSynchronize" not in names(cs)
        for bad in (dict(d, stream=0), dict(d, strides=(2, 6)),
                    dict(d, mask=object()), dict(d, version=1),
                    {k: v for k, v in d.items() if k != "shape"}):
            try:
                tack.from_dlpack(Obj(bad))
            except ValueError:
                pass
            else:
                raise AssertionError(bad)
        try:
            tack.from_dlpack(Obj(dict(d, typestr=">i2")))
        except TypeError:
            pass
        else:
            raise AssertionError("big-endian typestr accepted")
        host = np.zeros(4, dtype=np.float32)
        try:
            tack.from_dlpack(Obj(dict(d, data=(host.ctypes.data, False), shape=(4,),
                                      typestr="<f4")))
        except ValueError:
            pass
        else:
            raise AssertionError("host memory imported through the interface")
        """,
        tmp_path,
    )
