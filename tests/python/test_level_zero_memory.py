"""Level Zero arrays through the real loader on the strict stand-in driver: memory,
copies, the host round trip, and another library's context adopted with
external_context, in every loader mode (level_zero_helpers.MODES)."""

import pytest
from level_zero_helpers import modes, run, standin_only


@pytest.mark.parametrize("mode", modes())
def test_arrays_round_trip_through_the_device(mode):
    run("""
        dev = tack.device("level_zero")
        assert dev.dlpack_device == (14, 0)
        assert not ON_STANDIN or "Tack stand-in Level Zero GPU 0" in repr(dev)
        a = tack.empty((4, 5), dtype="float64", device=dev)
        assert a.device == dev and a.shape == (4, 5)
        z = tack.zeros(7, dtype="int16", device=dev)
        assert (z.numpy() == 0).all()
        f = tack.full(9, 2.5, dtype="float32", device=dev)
        assert (f.numpy() == 2.5).all()
        v = tack.full(6, 1.0, dtype="vec3", device=dev)  # a 12-byte pattern
        assert (v.numpy() == 1.0).all()
        host = np.arange(20.0).reshape(4, 5)
        b = tack.array(host, device=dev)
        tack.copyto(a, b)  # device to device
        assert (a.numpy() == host).all()
        back = a.to_device("cpu")
        assert back.device.name == "cpu" and (back.numpy() == host).all()
        c = back.to_device(dev)
        assert (np.asarray(c) == host).all()
        c.fill(-1.0)
        assert (c.numpy() == -1.0).all()
        try:
            c.export_memory()  # RuntimeError: only CUDA memory is exported
        except RuntimeError:
            pass
        else:
            raise AssertionError("exported")
        dev.synchronize()
    """, mode)


@pytest.mark.parametrize("mode", modes())
def test_an_adopted_context_is_a_device_and_domain_of_its_own(mode):
    run("""
        h = foreign_context()
        shared = tack.device("level_zero", external_context=h)
        plain = tack.device("level_zero")
        assert shared.shares_external_context and not plain.shares_external_context
        assert shared.external_context == h and plain.external_context is None
        assert shared.external_context is not shared.external_context  # a new dict
        assert shared != plain and shared.memory_domain != plain.memory_domain
        assert "external_context=..." in repr(shared)
        x = tack.array(np.arange(8, dtype=np.int32), device=plain)
        y = x.to_device(shared)  # through the host
        assert y.device == shared and (y.numpy() == np.arange(8)).all()
        y2 = tack.zeros(8, dtype="int32", device=shared)
        tack.copyto(y2, y)
        assert (y2.numpy() == np.arange(8)).all()
        del y, y2
        shared.synchronize()
        del shared
        import gc; gc.collect()
        # Tack destroyed only its own queue and list: the owner's context is intact,
        # and now unused (the stand-in refuses to destroy a context in use).
        assert destroy_context(h) == 0
    """, mode)


# A destroyed context: only the stand-in tracks destruction and says so.
@standin_only
# The loader's intercept layer reads a handle as its own wrapper before any driver
# sees it, so a forged or destroyed handle is out of anyone's reach there: only the
# modes where the loader passes handles through can show Tack's refusals.
@pytest.mark.parametrize("mode", modes("plain", "validation"))
def test_external_handles_that_are_not_the_loaders_are_value_errors(mode):
    run("""
        h = foreign_context()
        for bad in (dict(h, driver=h["driver"] + 8), dict(h, device=h["context"])):
            try:
                tack.device("level_zero", external_context=bad)
            except ValueError as e:
                assert "external_context[" in str(e), e
            else:
                raise AssertionError("accepted")
        assert destroy_context(h) == 0
        try:
            tack.device("level_zero", external_context=h)  # a destroyed context
        except ValueError as e:
            assert "external_context['context']" in str(e), e
        else:
            raise AssertionError("accepted")
    """, mode, expect=("was destroyed",))


# The stand-in told to offer no device.
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_no_device_and_no_driver_are_runtime_errors(mode):
    code = """
        try:
            tack.device("level_zero")
        except RuntimeError as e:
            print(e)
        else:
            raise AssertionError("opened")
    """
    assert "report no device" in run(code, mode, TACK_STANDIN_ZE_DEVICES="0").stdout
    out = run(code, mode, ZE_ENABLE_ALT_DRIVERS="/nonexistent/libze_none.so").stdout
    assert "found no driver" in out
    out = run(code, mode, TACK_LEVEL_ZERO_DRIVER="/nonexistent/libze_loader.so.1").stdout
    assert "/nonexistent/libze_loader.so.1" in out


@pytest.mark.parametrize("mode", modes())
def test_the_vtk_guard_reads_the_context_the_device_adopted(mode):
    # VTK's handle function is the one stand-in here (no VTK has it yet); the device,
    # its context and the handles it reports are the real backend's.
    run("""
        import types
        from tack.interop import vtk as tv
        h = foreign_context()
        support = types.SimpleNamespace(level_zero_handles=lambda: dict(h))
        tv._vtk_module = lambda: support
        dev = tv.init_level_zero()
        assert dev.shares_external_context and dev.external_context == h
        tv._adopted_handles.clear()  # the device's own report is what is read
        tv._require_shared_level_zero_context(dev)  # the same context: passes
        for other in (tack.device("level_zero"),
                      tack.device("level_zero", external_context=foreign_context())):
            try:
                tv._require_shared_level_zero_context(other)
            except RuntimeError as e:
                assert "init_level_zero()" in str(e)
            else:
                raise AssertionError("a different context passed the guard")
    """, mode)


# Only the stand-in complains of a free after the application ended.
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_nothing_is_freed_or_destroyed_once_the_interpreter_exits(mode):
    # The owner of an adopted context may be gone by then (its own atexit, its module
    # torn down): the stand-in complains of a free or destroy once told the
    # application has ended, which this child says first at its exit.
    run("""
        import atexit
        h = foreign_context()
        shared = tack.device("level_zero", external_context=h)
        keep = [tack.zeros(16, device=shared), tack.zeros(16, device="level_zero"), shared]
        atexit.register(os.environ.__setitem__, "TACK_STANDIN_ZE_ENDED", "1")
    """, mode)
