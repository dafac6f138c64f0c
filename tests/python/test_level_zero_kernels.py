"""@tack.kernel on Level Zero arrays, through the real loader on the strict stand-in
driver, in every loader mode (level_zero_helpers.MODES): the SPIR-V module made with
zeModuleCreate, its entry points launched on Tack's command list and computed by the
stand-in's CPU twins (TACK_STANDIN_ZE_EXECUTE=twin), every result compared with the
same kernel on the CPU."""

import textwrap

import pytest
from level_zero_helpers import modes, run, standin_only

KERNELS = textwrap.dedent("""
    import tack

    @tack.kernel
    def axpy(a, x, y):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    @tack.kernel
    def prefix(x, out):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
            out[i] = s

    @tack.kernel
    def total(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return s

    @tack.kernel
    def count_positive(x):
        n = 0
        for i in range(x.shape[0]):
            if x[i] > 0:
                n += 1
        return n

    @tack.kernel
    def histogram(values, h):
        for i in range(values.shape[0]):
            tack.atomic_add(h, int(values[i] * h.shape[0]), 1)

    @tack.kernel
    def scale32(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * tack.float32(0.5) + tack.float32(1.0)

    @tack.kernel(debug=True)
    def shifted(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i + 1]
""")

# Puts the kernels' module on the child's path (a kernel needs its source in a file).
_IMPORT = """
sys.path.insert(0, {folder!r})
import lzk
cpu = tack.device("cpu")
def both(dev, host):
    return tack.array(host, device=dev), tack.array(host, device=cpu)
"""


def run_kernels(code, mode, tmp_path, **env):
    (tmp_path / "lzk.py").write_text(KERNELS)
    env.setdefault("TACK_STANDIN_ZE_EXECUTE", "twin")
    return run(_IMPORT.format(folder=str(tmp_path)) + textwrap.dedent(code), mode,
               **env)


@pytest.mark.parametrize("mode", modes())
def test_kernels_on_level_zero_arrays_match_the_cpu(mode, tmp_path):
    run_kernels("""
        dev = tack.device("level_zero")
        rng = np.random.default_rng(5)
        host = rng.standard_normal(1000)
        x, xc = both(dev, host)
        y, yc = both(dev, np.ones(1000))
        lzk.axpy(2.0, x, y)
        lzk.axpy(2.0, xc, yc)
        assert y.device == dev and (y.numpy() == yc.numpy()).all()
        assert lzk.axpy.parallel and not lzk.prefix.parallel
        o, oc = both(dev, np.zeros(1000))
        lzk.prefix(x, o)   # serial: one work item
        lzk.prefix(xc, oc)
        assert (o.numpy() == oc.numpy()).all()
        assert np.isclose(lzk.total(x), lzk.total(xc), rtol=1e-12)
        assert lzk.count_positive(x) == lzk.count_positive(xc) == (host > 0).sum()
        e, ec = both(dev, np.zeros(0))  # no trip: the finish alone gives the identity
        assert lzk.total(e) == lzk.total(ec) == 0.0
        v, vc = both(dev, rng.random(5000))
        h, hc = both(dev, np.zeros(16, dtype=np.int32))
        lzk.histogram(v, h)
        lzk.histogram(vc, hc)
        assert (h.numpy() == hc.numpy()).all() and h.numpy().sum() == 5000
        f, fc = both(dev, host.astype(np.float32))
        g, gc = both(dev, np.zeros(1000, dtype=np.float32))
        lzk.scale32(f, g)
        lzk.scale32(fc, gc)
        assert g.numpy().dtype == np.float32 and (g.numpy() == gc.numpy()).all()
        dev.synchronize()
    """, mode, tmp_path)


@pytest.mark.parametrize("mode", modes())
def test_a_debug_mode_index_error_is_the_cpus(mode, tmp_path):
    run_kernels("""
        dev = tack.device("level_zero")
        errors = []
        for d in (dev, cpu):
            x = tack.array(np.arange(6.0), device=d)
            out = tack.zeros(6, dtype="float64", device=d)
            try:
                lzk.shifted(x, out)
            except IndexError as exc:
                errors.append(str(exc))
            else:
                raise AssertionError(f"no IndexError on {d}")
        assert errors[0] == errors[1], errors
        assert "'x'" in errors[0], errors
    """, mode, tmp_path)


@pytest.mark.parametrize("mode", modes())
def test_kernels_run_on_an_adopted_context(mode, tmp_path):
    run_kernels("""
        h = foreign_context()
        shared = tack.device("level_zero", external_context=h)
        x, xc = both(shared, np.arange(300.0))
        y, yc = both(shared, np.ones(300))
        lzk.axpy(3.0, x, y)
        lzk.axpy(3.0, xc, yc)
        assert (y.numpy() == yc.numpy()).all()
        assert lzk.total(x) == lzk.total(xc)
        plain = tack.device("level_zero")  # the same kernel, another context's module
        p = tack.array(np.arange(300.0), device=plain)
        assert lzk.total(p) == lzk.total(xc)
        shared.synchronize()
    """, mode, tmp_path)


@pytest.mark.parametrize("mode", modes())
def test_arrays_of_two_contexts_never_meet_in_a_launch(mode, tmp_path):
    run_kernels("""
        h = foreign_context()
        shared = tack.device("level_zero", external_context=h)
        plain = tack.device("level_zero")
        other = tack.device("level_zero", external_context=foreign_context())
        for a_dev, b_dev in ((plain, shared), (shared, other)):
            x = tack.array(np.arange(4.0), device=a_dev)
            y = tack.array(np.ones(4), device=b_dev)
            try:
                lzk.axpy(1.0, x, y)
            except ValueError as exc:
                msg = str(exc)
            else:
                raise AssertionError("arrays of two contexts met in a launch")
            assert "'x'" in msg and "'y'" in msg, msg
            assert msg.count("level_zero:0") == 2 and "external_context" in msg, msg
            assert (y.numpy() == 1.0).all()
    """, mode, tmp_path)


@standin_only
def test_a_device_without_fp64_refuses_a_float64_module_before_making_it(tmp_path):
    run_kernels("""
        dev = tack.device("level_zero")
        for kernel, dtype in ((lzk.axpy, "float64"), (lzk.scale32, "float32")):
            x = tack.zeros(8, dtype=dtype, device=dev)
            y = tack.zeros(8, dtype=dtype, device=dev)
            args = (2.0, x, y) if kernel is lzk.axpy else (x, y)
            try:
                kernel(*args)
            except RuntimeError as exc:
                msg = str(exc)
            else:
                raise AssertionError("a float64 module ran without fp64")
            assert "float64" in msg and "FP64" in msg and kernel.__name__ in msg, msg
    """, "plain", tmp_path, TACK_STANDIN_ZE_FP64="0")
