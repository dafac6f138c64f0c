"""@tack.kernel on Level Zero arrays, through the real loader on the strict stand-in
driver, in every loader mode (level_zero_helpers.MODES): the SPIR-V module made with
zeModuleCreate, its entry points launched on Tack's command list and computed by the
stand-in's CPU twins (TACK_STANDIN_ZE_EXECUTE=twin), every result compared with the
same kernel on the CPU."""

import importlib.util
import textwrap

import opencl_cpu_runtime
import pytest
from level_zero_helpers import modes, run, standin_only
from test_level_zero_spirv import capabilities, validation_errors

from tack.kernel import spirv

FLOAT64 = 10  # the Float64 capability, as OpCapability writes it

KERNELS = textwrap.dedent("""
    import math

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

    @tack.kernel
    def axpy_to_int(a, x, y, n):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]
            n[i] = int(y[i] * 4.0)

    @tack.kernel
    def total32(x):
        s = tack.f32(0.0)
        for i in range(x.shape[0]):
            s += x[i]
        return s

    @tack.kernel
    def smallest32(x):
        s = tack.f32(math.inf)
        for i in range(x.shape[0]):
            s = min(s, x[i])
        return s

    @tack.kernel
    def pick32(x, i):
        return x[i] * 1.0

    @tack.kernel
    def put32(a, out):
        out[0] = a

    @tack.kernel
    def int_sum(x):
        s = 0
        for i in range(x.shape[0]):
            s += x[i] * 3
        return s
""")

# A prelude that calls a func reading an array: the trip count needs no element, but
# the prelude does, so it must run on the device, never on the host (fuzzer seed 34172:
# the host's trip count ran it and read device memory)
KERNELS += textwrap.dedent("""

    @tack.func
    def first(p):
        return math.lgamma(p[0])  # lgamma sets signgam: no compiler drops the call

    @tack.kernel
    def offset_by_first(x, out):
        base = first(x)
        for i in range(out.shape[0]):
            out[i] = x[i] - base
""")

# A kernel of MANY float64 and MANY int64 sums: 8 bytes of partials each, 1280 bytes
# a work item, so the 256 work items a driver suggests would need 320 KiB of local
# memory, more than a group has (64 KiB on Intel's GPUs, 256 KiB on its OpenCL CPU
# runtime).
MANY = 80
KERNELS += f"\nMANY = {MANY}\n\n@tack.kernel\ndef many_sums(x, k):\n" + "".join(
    f"    f{j} = 0.0\n    n{j} = 0\n" for j in range(MANY)) + \
    "    for i in range(x.shape[0]):\n" + "".join(
    f"        f{j} += x[i] * {j + 1}.0\n        n{j} += k[i] - {j}\n"
    for j in range(MANY)) + \
    "    return " + " + ".join(f"f{j} - n{j}" for j in range(MANY)) + "\n"

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


# The launches the stand-in ran, by SPIR-V and by twin, on the child's stdout.
_EXECUTED = """
lib = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"].split(",")[0])
by = (ctypes.c_uint64 * 2)()
lib.tack_standin_ze_executed(ctypes.byref(by, 0), ctypes.byref(by, 8))
print("executed", by[0], by[1])
"""


def run_executing(code, execute, tmp_path, mode="plain", **env):
    """Runs code in the plain mode with TACK_STANDIN_ZE_EXECUTE=execute (skipped where
    "spirv" cannot be): the launches the stand-in ran by SPIR-V and by twin."""
    if execute == "spirv" and opencl_cpu_runtime.library_dir() is None:
        pytest.skip("Intel's OpenCL CPU runtime is not installed (make setup): the "
                    "stand-in cannot execute SPIR-V")
    out = run_kernels(textwrap.dedent(code) + _EXECUTED, mode, tmp_path,
                      TACK_STANDIN_ZE_EXECUTE=execute, **env).stdout
    by_spirv, by_twin = map(int, out.split("executed")[1].split())
    return by_spirv, by_twin


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


FLOAT32_RUN = """
    dev = tack.device("level_zero")
    rng = np.random.default_rng(7)
    host = rng.standard_normal(1000).astype(np.float32)
    x, xc = both(dev, host)
    y, yc = both(dev, np.ones(1000, dtype=np.float32))
    n, nc = both(dev, np.zeros(1000, dtype=np.int32))
    lzk.axpy_to_int(np.float32(2.0), x, y, n)  # a NumPy float32 scalar stays float32
    lzk.axpy_to_int(np.float32(2.0), xc, yc, nc)
    assert (y.numpy() == yc.numpy()).all() and (n.numpy() == nc.numpy()).all()
    g, gc = both(dev, np.zeros(1000, dtype=np.float32))
    lzk.scale32(x, g)
    lzk.scale32(xc, gc)
    assert (g.numpy() == gc.numpy()).all()
    # a float32 sum adds float32 partials: the value is a float32's, close to the CPU's
    # (the GPU associates by the launch shape)
    t, tc = lzk.total32(x), lzk.total32(xc)
    assert t == float(np.float32(t)) and tc == float(np.float32(tc)), (t, tc)
    assert np.isclose(t, tc, rtol=1e-4, atol=1e-4), (t, tc)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-40,
                         3.4028235e38, 1.17549435e-38, -1.5, 0.1], dtype=np.float32)
    v, vc = both(dev, specials)
    assert lzk.smallest32(x) == lzk.smallest32(xc) == host.min()
    got = [lzk.smallest32(v), lzk.total32(v)]
    want = [lzk.smallest32(vc), lzk.total32(vc)]
    for i in range(len(specials)):  # a returned float32 as its double, bit for bit
        got.append(lzk.pick32(v, i))
        want.append(lzk.pick32(vc, i))
        assert np.float64(want[-1]).tobytes() == np.float64(specials[i]).tobytes(), i
        lzk.put32(specials[i], g)  # a float32 scalar argument, bit for bit
        assert g.numpy()[:1].tobytes() == specials[i:i + 1].tobytes(), i
    assert np.array(got).tobytes() == np.array(want).tobytes(), (got, want)
    assert lzk.count_positive(x) == lzk.count_positive(xc) == (host > 0).sum()
    k, kc = both(dev, np.arange(-50, 950))
    assert lzk.int_sum(k) == lzk.int_sum(kc) == 3 * np.arange(-50, 950).sum()
    errors = []
    for d in (dev, cpu):
        a = tack.array(host[:6], device=d)
        b = tack.zeros(6, dtype="float32", device=d)
        try:
            lzk.shifted(a, b)
        except IndexError as exc:
            errors.append(str(exc))
    assert len(errors) == 2 and errors[0] == errors[1], errors
"""


@standin_only
@pytest.mark.parametrize("mode", modes())
@pytest.mark.parametrize("execute", ["twin", "spirv"])
def test_float32_kernels_run_on_a_device_without_fp64(execute, mode, tmp_path):
    by_spirv, by_twin = run_executing(FLOAT32_RUN, execute, tmp_path, mode,
                                      TACK_STANDIN_ZE_FP64="0")
    assert (by_spirv > 20 and by_twin == 0) if execute == "spirv" else \
        (by_twin > 20 and by_spirv == 0), (by_spirv, by_twin)


def _request(tmp_path, name, signature):
    """The Level Zero build request of lzk.<name> for signature, made here."""
    (tmp_path / "lzk.py").write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("lzk_here", tmp_path / "lzk.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name).compile.spell(spirv.spirv_request, signature, False)


F32 = ("array", "float32", 1)


@pytest.mark.parametrize("name, signature, float64", [
    ("axpy_to_int", ("float32", F32, F32, ("array", "int32", 1)), False),
    ("total32", (F32,), False),
    ("smallest32", (F32,), False),
    ("pick32", (F32, "int"), False),
    ("int_sum", (("array", "int64", 1),), False),
    ("put32", ("float32", F32), False),
    ("axpy", ("float", F32, F32), True),  # a Python float is float64
    ("total", (F32,), True),  # s = 0.0 is a float64 local
])
def test_only_a_kernel_computing_in_float64_declares_float64(name, signature, float64,
                                                             tmp_path):
    module = _request(tmp_path, name, signature).image
    assert (FLOAT64 in capabilities(module)) == float64
    assert not validation_errors(name, module, tmp_path)


@standin_only
@pytest.mark.parametrize("mode", modes())
def test_a_device_without_fp64_refuses_a_float64_module_before_making_it(mode, tmp_path):
    run_kernels("""
        dev = tack.device("level_zero")
        for kernel, dtype in ((lzk.axpy, "float64"), (lzk.axpy, "float32"),
                              (lzk.total, "float32")):
            x = tack.zeros(8, dtype=dtype, device=dev)
            y = tack.zeros(8, dtype=dtype, device=dev)
            args = (2.0, x, y) if kernel is lzk.axpy else (x,)
            try:
                kernel(*args)
            except RuntimeError as exc:
                msg = str(exc)
            else:
                raise AssertionError("a float64 module ran without fp64")
            assert "float64" in msg and "FP64" in msg and kernel.__name__ in msg, msg
            assert "write it in float32" in msg and "tack.f32" in msg, msg
            assert (y.numpy() == 0).all()
    """, mode, tmp_path, TACK_STANDIN_ZE_FP64="0")


MANY_RUN = """
    dev = tack.device("level_zero")
    host = np.random.default_rng(11).integers(-1000, 1000, 5000)
    x, xc = both(dev, host.astype(np.float64))  # whole numbers: every order is exact
    k, kc = both(dev, host)
    want = sum((j + 1) * host.sum() - (host - j).sum() for j in range(lzk.MANY))
    assert lzk.many_sums(x, k) == lzk.many_sums(xc, kc) == want
"""


@standin_only
@pytest.mark.parametrize("mode", modes())
@pytest.mark.parametrize("execute", ["twin", "spirv"])
def test_many_reductions_fit_the_groups_local_memory(execute, mode, tmp_path):
    # the driver's suggested group size is capped by maxSharedLocalMemory / the
    # partials' bytes; the stand-in refuses a launch that asks for more
    by = run_executing(MANY_RUN, execute, tmp_path, mode)
    assert by == ((2, 0) if execute == "spirv" else (0, 2)), by


@standin_only
@pytest.mark.parametrize("mode", modes())
def test_a_work_items_partials_beyond_the_groups_local_memory_are_refused(mode,
                                                                           tmp_path):
    run_kernels("""
        dev = tack.device("level_zero")
        x = tack.zeros(64, device=dev)
        k = tack.zeros(64, dtype="int64", device=dev)
        try:
            lzk.many_sums(x, k)
        except RuntimeError as exc:
            msg = str(exc)
        else:
            raise AssertionError("partials beyond local memory were launched")
        assert "many_sums" in msg and "1280 bytes" in msg and "160 reductions" in msg, msg
        assert "1024 bytes" in msg and "maxSharedLocalMemory" in msg, msg
        assert lzk.total(x) == 0.0  # 8 bytes a work item: 128 of them fit
    """, mode, tmp_path, TACK_STANDIN_ZE_LOCAL_MEMORY="1024")


@pytest.mark.parametrize("mode", modes())
def test_seed_34172_a_prelude_reading_an_array_through_a_func_runs_on_the_device(
        mode, tmp_path):
    # before: the host computed the trip count with the prelude, read the device's
    # memory and died of SIGSEGV
    run_kernels("""
        dev = tack.device("level_zero")
        host = np.arange(10.0) + 3.0
        x, xc = both(dev, host)
        o, oc = both(dev, np.zeros(10))
        lzk.offset_by_first(x, o)
        lzk.offset_by_first(xc, oc)
        assert (o.numpy() == oc.numpy()).all()
        assert np.isclose(o.numpy()[1], 4.0 - np.log(2.0))  # lgamma(3) = log(2!)
    """, mode, tmp_path)
