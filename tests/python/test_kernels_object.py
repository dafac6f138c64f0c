"""The tack.Kernel object itself: a build its compile callable returns runs only if
it is the build of the call (parameter key words, backend and stored parameters);
its repr."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_helpers import private_kernel_cache, read_only  # noqa: F401  (autouse)

import tack
from tack.kernel import Kernel


@tack.kernel
def fill(out, v):
    for i in range(out.shape[0]):
        out[i] = v


@tack.kernel
def copy(src, out):
    for i in range(out.shape[0]):
        out[i] = src[i]


def lying_stored(k: Kernel, stored: tuple[bool, ...]) -> Kernel:
    """k's own front end behind stored flags that are not k's."""
    return Kernel(k.name, k.params, stored, k.compile)


@pytest.mark.parametrize("make", [
    lambda: read_only(4, np.float64),
    lambda: tack.from_dlpack(np.frombuffer(bytes(32), dtype=np.float64)),
], ids=["read-only numpy", "bytes"])
def test_stored_flags_that_hide_a_store_are_refused(make):
    ro = make()
    before = ro.numpy().copy()
    k = lying_stored(fill, (False, False))
    with pytest.raises(ValueError, match=r"kernel 'fill'.*'out'.*stored") as info:
        k(ro, 1.5)
    assert "stores to" in str(info.value)
    np.testing.assert_array_equal(ro.numpy(), before)  # nothing ran


def test_stored_flags_that_claim_a_store_the_build_lacks_are_refused():
    k = lying_stored(copy, (True, True))
    out = tack.zeros(3)
    with pytest.raises(ValueError, match=r"kernel 'copy'.*'src'"):
        k(tack.zeros(3), out)


def test_honest_flags_run():
    k = lying_stored(copy, (False, True))
    out = tack.zeros(3)
    k(tack.array(np.arange(3.0)), out)
    np.testing.assert_array_equal(out.numpy(), np.arange(3.0))


# A compile callable that returns the build of another signature: 3-d float64
# arrays, so the launch would read extents past the 1-d array's shape and write
# far past its memory.
WRONG_SIGNATURE = '''
import numpy as np
import tack
from tack.kernel import Kernel

@tack.kernel
def fill(out, v):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for k in range(out.shape[2]):
                out[i, j, k] = v

def other(signature, debug, backend):
    return fill.compile(({sig!r}, "float"), debug, backend)

lying = Kernel("fill", ("out", "v"), (True, False), other)
out = tack.zeros(4, dtype=tack.{dtype})
try:
    lying(out, 2.0)
except TypeError as exc:
    print("refused:", exc)
else:
    print("ran")
'''


@pytest.mark.parametrize(("sig", "dtype", "words"), [
    (("array", "float64", 3), "f64", "float64 array of 3 dimensions"),
    (("array", "int8", 3), "f64", "int8 array of 3 dimensions"),
])
def test_a_build_of_another_signature_is_refused(tmp_path, sig, dtype, words):
    script = tmp_path / "lie.py"
    script.write_text(textwrap.dedent(WRONG_SIGNATURE).format(sig=sig, dtype=dtype))
    env = {**os.environ, "TACK_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("refused:"), out.stdout + out.stderr[-2000:]
    assert "kernel 'fill'" in out.stdout and "'out'" in out.stdout
    assert words in out.stdout and "float64 array of 1 dimension" in out.stdout


def test_a_build_with_another_parameter_count_is_refused():
    k = Kernel("fill", ("out",), (True,), lambda s, d, b: fill.compile(
        (("array", "float64", 1), "float"), d, b))
    with pytest.raises(TypeError, match=r"kernel 'fill'.*2 parameters.*1"):
        k(tack.zeros(2))


def test_a_refused_build_is_not_kept():
    calls = []

    def compile_(signature, debug, backend):
        calls.append(signature)
        return fill.compile((("array", "float32", 1), "float"), debug, backend)

    k = Kernel("fill", ("out", "v"), (True, False), compile_)
    for _ in range(2):
        with pytest.raises(TypeError, match="float32 array"):
            k(tack.zeros(2, dtype=tack.f64), 1.0)
    assert len(calls) == 2 and k._nspecializations == 0
    out = tack.zeros(2, dtype=tack.f32)
    k(out, 1.0)  # the call it was built for runs
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0])


def test_repr_names_the_kernel_and_whether_its_loop_runs_in_parallel():
    @tack.kernel
    def serial_sum(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i]  # not a reduction: Python's order
        return s

    assert repr(fill) == "<tack.kernel fill (parallel loop)>" and fill.parallel is True
    assert repr(serial_sum) == "<tack.kernel serial_sum (serial)>"
    assert serial_sum.parallel is False
    bare = Kernel("bare", (), (), fill.compile)
    assert repr(bare) == "<tack.kernel bare>" and bare.parallel is None
    assert Kernel("k", (), (), fill.compile, parallel=0).parallel is False
    with pytest.raises(TypeError):
        Kernel("k", (), (), fill.compile, None, True)  # parallel is keyword-only


def test_stream_is_the_launchs_keyword_not_a_parameter_name():
    # A call's stream= orders the launch against another library's stream
    # (docs/kernels.md, Launching on CUDA); a parameter of that name could never be
    # passed by keyword, so it is refused where the kernel is defined.
    with pytest.raises(tack.KernelError, match="'stream' is reserved"):
        @tack.kernel
        def scale(out, stream):
            for i in range(out.shape[0]):
                out[i] = out[i] * stream


def test_a_cpu_launch_takes_only_the_streams_that_order_nothing():
    out = tack.zeros(4)
    fill(out, 2.0, stream=None)
    fill(out, 3.0, stream=-1)
    fill(out=out, v=4.0, stream=-1)
    assert np.array_equal(out.numpy(), np.full(4, 4.0))
    for bad in (1, 2, 0, "1", 1.0):
        with pytest.raises(tack.DLPackError) as e:
            fill(out, 5.0, stream=bad)
        assert isinstance(e.value, BufferError)
    assert np.array_equal(out.numpy(), np.full(4, 4.0))  # nothing ran
    with pytest.raises(TypeError, match="unexpected keyword argument 'streams'"):
        fill(out, 1.0, streams=1)
