"""The CUDA emitter (tack/kernel/emit_cuda.py): what a launch needs to know of a
module, checked against the PTX that the real NVRTC makes of it (no GPU needed).

test_cuda_nvrtc.py compiles every kernel of the suite; these tests pin the contract
with the launch side: the parameter block's layout, the grid-stride loop, the
serial rule, the trip count's home, reduction partials, atomics and the debug-mode
failure record.
"""

from __future__ import annotations

import re

import pytest

import tack
from tack import _tack
from tack.kernel import generate_cuda

F32_1 = ("array", "float32", 1)
F64_1 = ("array", "float64", 1)


def ptx_of(source: str) -> str:
    return _tack._nvrtc_compile(source, 90, ptx=True).rstrip(b"\0").decode()


def entry_params(ptx: str, entry: str) -> list[str]:
    """The .param declarations of one entry point of the PTX."""
    m = re.search(rf"\.entry {entry}\((.*?)\)", ptx, re.S)
    assert m, f"no entry {entry} in the PTX"
    return [p.strip() for p in m.group(1).split(",")]


@tack.kernel
def scale_rows(out, a, s, n):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = a[i] * s + n


def test_parameter_block_is_the_runtimes_block_then_the_context():
    ck = generate_cuda(scale_rows, (("array", "float32", 2), F64_1, "float", "int"),
                       debug=False)
    # tack_kernel_params_pack: out's pointer and 2 extents, a's pointer and extent,
    # the float as a double, the int as an int64: 7 words
    assert ck.params_size == 7 * 8
    assert ("typedef struct { void *a0; int64_t a0_n[2]; void *a1; int64_t a1_n[1]; "
            "double a2; int64_t a3; } tk_params;") in ck.source
    # the key words the runtime packs by, readable from the module
    assert "tack_kernel_param_key[] = {" in ck.source
    ptx = ptx_of(ck.source)
    for entry in ("tack_kernel_body", "tack_kernel_trips"):
        params = entry_params(ptx, entry)
        assert re.fullmatch(rf".param .align 8 .b8 \w+\[{ck.params_size}\]", params[0])
        assert re.fullmatch(r".param .u64 .ptr .align 1 \w+|.param .u64 \w+", params[1])
    assert ck.parallel and ck.host_trips and not ck.needs_ctx


def test_parallel_loop_is_a_64_bit_grid_stride_loop():
    ck = generate_cuda(scale_rows, (("array", "float32", 2), F64_1, "float", "int"),
                       debug=False)
    # an unsigned counter that never steps past the count (no overflow near 2**63)
    assert ("for (uint64_t tk_g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; "
            "tk_g < tk_gn; tk_g = tk_gn - tk_g > tk_stride ? tk_g + tk_stride : tk_gn)"
            ) in ck.source
    assert "const uint64_t tk_stride = (uint64_t)gridDim.x * blockDim.x;" in ck.source
    assert "const int64_t tk_k = (int64_t)tk_g;" in ck.source
    ptx = ptx_of(ck.source)
    # the trip index and the stride are 64-bit in the PTX as well
    assert re.search(r"mul\.wide\.u32|cvt\.u64\.u32", ptx)
    assert re.search(r"setp\.\w+\.s64", ptx)


@tack.kernel
def prefix_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + a[i]  # not a reduction: the kernel is serial
        a[i] = s


def test_serial_kernel_runs_on_one_thread_in_pythons_order():
    ck = generate_cuda(prefix_sum, (F64_1,), debug=False)
    assert not ck.parallel and not ck.host_trips
    assert "if (blockIdx.x != 0 || threadIdx.x != 0) return;" in ck.source
    ptx = ptx_of(ck.source)
    assert ".entry tack_kernel_body" in ptx
    assert ".entry tack_kernel_trips" not in ptx


@tack.kernel
def first_n(out, counts):
    n = counts[0]
    for i in range(n):
        out[i] = i


def test_trip_count_on_the_host_only_when_it_needs_no_element():
    assert generate_cuda(scale_rows, (("array", "float32", 2), F64_1, "float", "int"),
                         debug=False).host_trips
    ck = generate_cuda(first_n, (F32_1, ("array", "int64", 1)), debug=False)
    assert ck.parallel and not ck.host_trips
    # every thread computes the count itself; tack_kernel_trips reports it
    ptx = ptx_of(ck.source)
    assert ".entry tack_kernel_trips" in ptx


@tack.kernel
def stats(x, flags):
    s = 0.0
    hits = 0
    lo = x[0]
    for i in range(x.shape[0]):
        s += x[i]
        hits += flags[i] > 0
        lo = min(lo, x[i])
    return s + hits + lo


def test_reductions_have_block_partials_and_a_finish_entry():
    ck = generate_cuda(stats, (F32_1, ("array", "int32", 1)), debug=False)
    # three partials: double s (8), int64 hits (8), float lo (4) padded to 8, and
    # lo's trip (8): a float min's partial carries where its value came from
    assert ck.partial_size == 32
    assert ck.needs_ctx and ck.result_kind == 2
    assert "extern __shared__ double tk_shm[];" in ck.source
    # a fixed tree: left before right at every width
    assert "if (tk_t % (2 * tk_w) == 0 && tk_t + tk_w < blockDim.x)" in ck.source
    ptx = ptx_of(ck.source)  # static_assert(sizeof(tk_red) == 32) holds
    assert ".entry tack_kernel_finish" in ptx
    assert "bar.sync" in ptx


@tack.kernel
def atomics(h, v):
    for i in range(v.shape[0]):
        tack.atomic_add(h, i % 4, v[i])
        tack.atomic_sub(h, 4 + i % 4, v[i])
        tack.atomic_min(h, 8, v[i])
        tack.atomic_max(h, 9, v[i])


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64", "float32",
                                   "float64"])
def test_atomics_compile_for_every_element_type(dtype):
    ck = generate_cuda(atomics, (("array", dtype, 1), ("array", dtype, 1)), debug=False)
    ptx = ptx_of(ck.source)
    assert re.search(r"atom\.global\.add|red\.global\.add", ptx)
    if dtype.startswith("float"):
        # min and max of floats have no instruction: compare-and-swap loops
        assert re.search(r"atom\.global\.cas\.b(32|64)", ptx)
    else:
        assert re.search(r"atom\.global\.(min|max)", ptx)


@tack.kernel
def checked(a, b, d):
    for i in range(a.shape[0]):
        a[i] = b[i + 1] // d


def test_debug_failure_record_names_arrays_by_number():
    ck = generate_cuda(checked, (("array", "int64", 1), ("array", "int64", 1), "int"),
                       debug=True)
    assert ck.needs_ctx
    assert set(ck.names) == {"a", "b"}
    # the first failure claims the record with atomicCAS; the host reads names[n]
    assert "atomicCAS(&c->claimed, 0, 1)" in ck.source
    b = ck.names.index("b")
    assert f"p_b_n0, INT64_C(0), {b}, INT64_C(" in ck.source
    ptx = ptx_of(ck.source)
    assert "atom.global.cas.b32" in ptx or "atom.cas.b32" in ptx


def test_line_directives_point_compile_errors_at_the_python_file():
    ck = generate_cuda(checked, (("array", "int64", 1), ("array", "int64", 1), "int"),
                       debug=False)
    line = checked.__wrapped__.__code__.co_firstlineno + 2
    marker = f'#line {line} "{__file__}"\n'
    assert marker in ck.source
    broken = ck.source.replace(marker, marker + "        undeclared_name();\n", 1)
    with pytest.raises(tack.CompileError) as info:
        _tack._nvrtc_compile(broken, 90)
    assert f"{__file__}({line})" in str(info.value)
    assert "undeclared_name" in str(info.value)


@tack.kernel
def axpb(y, x, a, b):
    for i in range(y.shape[0]):
        y[i] = a * x[i] + b * y[i] - x[i] / a


@pytest.mark.parametrize("dtype,scalar", [("float32", "float32"),
                                          ("float64", "float")])
def test_float_arithmetic_is_never_contracted(dtype, scalar):
    ck = generate_cuda(axpb, (("array", dtype, 1), ("array", dtype, 1), scalar, scalar),
                       debug=False)
    assert not ck.libm
    ptx = ptx_of(ck.source)
    assert re.search(r"\bmul\.rn\.f(32|64)", ptx)
    assert "fma." not in ptx
    # the check above can fail: an explicit fma shows up in the PTX
    fused = ck.source.replace("tk_mul(v_a, p_x[v_i])", "fma(v_a, p_x[v_i], v_b)", 1)
    assert fused != ck.source
    assert "fma." in ptx_of(fused)


@tack.kernel
def halve(h, out):
    for i in range(h.shape[0]):
        out[i] = h[i] * 0.5
        h[i] = out[i]


def test_float16_is_stored_as_its_bits():
    ck = generate_cuda(halve, (("array", "float16", 1), F32_1), debug=False)
    assert "#define TK_HALF 1" in ck.source
    assert "uint16_t *const p_h" in ck.source
    ptx_of(ck.source)


@tack.func
def norm2(x, y):
    return x * x + y * y


@tack.kernel
def radius(out, p):
    for i in range(out.shape[0]):
        t = tack.local_array((2,), tack.f32)
        t[0] = p[i, 0]
        t[1] = p[i, 1]
        out[i] = norm2(t[0], t[1])


def test_functions_and_local_arrays_compile():
    ck = generate_cuda(radius, (F32_1, ("array", "float32", 2)), debug=False)
    ptx = ptx_of(ck.source)
    assert "fma." not in ptx  # x * x + y * y stays two multiplies and an add
    assert ".entry tack_kernel_body" in ptx


@tack.kernel
def scaled_copy(out, x, a):
    for i in range(out.shape[0]):
        out[i] = x[i] * a


def test_restrict_entry_reads_through_the_read_only_cache():
    ck = generate_cuda(scaled_copy, (F32_1, F32_1, "float32"), debug=False)
    assert ck.restrict
    assert "const float *__restrict__ p_x" in ck.source
    ptx = ptx_of(ck.source)
    body = ptx[ptx.index(".entry tack_kernel_body("):]
    plain = body[:body.index(".entry tack_kernel_body_restrict(")]
    restrict = body[body.index(".entry tack_kernel_body_restrict("):]
    # only the promise lets NVRTC load x through the non-coherent (read-only) path
    assert "ld.global.nc" in restrict
    assert "ld.global.nc" not in plain
    # one array, or nothing stored: no second entry
    assert not generate_cuda(affine_one, (F32_1,), debug=False).restrict


@tack.kernel
def affine_one(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2.0
