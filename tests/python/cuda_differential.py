"""A pytest plugin (``-p cuda_differential``) that turns every kernel launch of the
suite it runs into a comparison of the CPU and the CUDA backend.

Every ``@tack.kernel`` made while it is loaded gets a twin compiled from the same
function for CUDA launches (so the suite's own kernel keeps its specialization
count). A launch whose arrays are all CPU arrays of Tack then:

1. copies every array argument to the CUDA device with ``to_device`` BEFORE the CPU
   launch (which writes its arrays); arguments that are one array twice, or views of
   one buffer, stay one buffer on the device;
2. runs the CPU launch, then the same kernel on the copies;
3. compares, after both: every array argument (integers and bools exactly; floats
   bit for bit, NaN equal to any NaN, unless the kernel calls the math library:
   then within twice the ulp bound docs/kernels.md gives for the functions it calls,
   since each side may be that far from the true value), the returned value (the
   same rule; a float reduction also within the regrouping bound below), or the
   exception (same type, same message).

A launch that cannot run on CUDA by design (no array argument, an argument that is
not a tack.Array or a scalar, arrays already on another device, a read-only array
bound to a parameter the kernel stores to, arguments that overlap in memory without
being one buffer or view one buffer as different dtypes, a forked child) is counted
under its reason. Every other refusal of the CUDA backend is a mismatch.

Float reductions regroup per launch shape (docs/kernels.md, "What differs on the
GPU"). Two evaluation orders of a sum of n terms t_k in unit roundoff u each lie
within gamma(n-1) * sum |t_k| of the exact sum, gamma(m) = m*u / (1 - m*u), so they
differ by at most 2 * gamma(n-1) * sum |t_k|. The terms are not visible from
outside the kernel; the plugin takes n as the largest element count among the
arguments (every trip of the suite's reductions reads at most one element per term)
and sum |t_k| as the larger of the two results' magnitudes, which is exact for terms
of one sign and too small under cancellation: a cancelling sum can show as a
mismatch, never a difference hide.

Environment: TACK_DIFFERENTIAL_JSON (required) names the summary written at the end;
events are appended to TACK_DIFFERENTIAL_JSON + ".events" by every process
(forked children too). TACK_DIFFERENTIAL_PERTURB=<kernel name> changes the CUDA
side's result of that kernel by one unit in the last place before the comparison,
a test-only hook that proves a difference is caught. A mismatch also fails the test
in which it happened (at its teardown).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest
from cuda_compare import Facts, compare_arrays, compare_values, exception_text, same_exception

import tack
from tack import _tack

_front = importlib.import_module("tack.kernel")

SUMMARY = os.environ["TACK_DIFFERENTIAL_JSON"]
EVENTS = SUMMARY + ".events"
PERTURB = os.environ.get("TACK_DIFFERENTIAL_PERTURB", "")
_MAIN_PID = os.getpid()
_original_kernel = _front.kernel


# Tests whose subject is the build's own bookkeeping (the front end's build calls,
# the compiler's runs, the cache folder's entries): a CUDA build beside each CPU one
# would change what they count, so their launches are counted as skipped.
OBSERVES_THE_BUILD = {
    "test_the_dispatcher_builds_for_the_backend_of_the_key",
    "test_compile_error_carries_the_log_and_repeats_without_recompiling",
    "test_cache_dir_is_private",
}


def _signature(args: list[Any]) -> tuple[Any, ...]:
    """The signature the dispatcher compiles for (kernel_py.c's signature_of)."""
    sig: list[Any] = []
    for a in args:
        if isinstance(a, tack.Array):
            sig.append(("array", a.dtype.name, a.ndim))
        elif isinstance(a, bool | np.bool_):
            sig.append("bool")
        elif isinstance(a, np.float32 | np.float16):
            sig.append("float32")
        elif isinstance(a, float | np.floating):
            sig.append("float")
        else:
            sig.append("int")
    return tuple(sig)


def _is_scalar(a: Any) -> bool:
    return isinstance(a, int | float | bool | np.integer | np.floating | np.bool_)


# ---- recording ------------------------------------------------------------------

_lock = threading.Lock()
_current_test = "collection"
_failures: dict[str, list[str]] = {}  # test -> mismatches seen in it (this process)


def _record(kind: str, kernel: Any, reason: str = "") -> None:
    code = getattr(kernel.__wrapped__, "__code__", None)
    event = {"kind": kind, "kernel": kernel.__name__, "test": _current_test,
             "file": code.co_filename if code else "?",
             "line": code.co_firstlineno if code else 0, "reason": reason}
    line = json.dumps(event) + "\n"
    with _lock:
        fd = os.open(EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if kind == "mismatch" and os.getpid() == _MAIN_PID:
            _failures.setdefault(_current_test, []).append(
                f"{kernel.__name__} ({event['file']}:{event['line']}): {reason}")


# ---- the checked kernel -----------------------------------------------------------


class _Checked:
    """A tack.Kernel (isinstance says so) whose calls compare CPU and CUDA."""

    def __init__(self, cpu: Any, gpu: Any) -> None:
        object.__setattr__(self, "_cpu", cpu)
        object.__setattr__(self, "_gpu", gpu)
        object.__setattr__(self, "_facts", {})
        for attr in ("__module__", "__name__", "__qualname__", "__doc__", "__wrapped__"):
            object.__setattr__(self, attr, getattr(cpu, attr, None))

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return _tack.Kernel

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cpu, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._cpu, name, value)

    def __repr__(self) -> str:
        return repr(self._cpu)

    def facts(self, args: list[Any]) -> Facts | None:
        sig = _signature(args)
        debug = _front._debug_from_env() if self._cpu.compile.debug is None else bool(
            self._cpu.compile.debug)
        key = (sig, debug)
        if key not in self._facts:
            try:
                self._facts[key] = self._cpu.compile.spell(Facts, sig, debug)
            except (tack.KernelError, tack.CompileError, TypeError):
                self._facts[key] = None  # the launches raise; exceptions are compared
        return self._facts[key]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        names = list(self._cpu.params)
        by_name = [n for n in names[len(args):] if n in kwargs]
        bound = list(args) + [kwargs[n] for n in by_name]
        if len(bound) != len(args) + len(kwargs):  # a binding error: both raise it
            return self._cpu(*args, **kwargs)
        why = self._why_not(bound)
        if why:
            _record("skipped", self, why)
            return self._cpu(*args, **kwargs)
        try:
            copies = _device_copies(bound)
        except tack.TackError as e:
            _record("skipped", self, f"copying an argument to CUDA failed: {e}")
            return self._cpu(*args, **kwargs)
        gargs = copies[:len(args)]
        gkwargs = dict(zip(by_name, copies[len(args):], strict=True))
        cpu_exc = gpu_exc = None
        cpu_value = gpu_value = None
        try:
            cpu_value = self._cpu(*args, **kwargs)
        except Exception as e:  # compared below, then re-raised
            cpu_exc = e
        try:
            gpu_value = self._gpu(*gargs, **gkwargs)
        except Exception as e:
            gpu_exc = e
        self._compare(bound, copies, cpu_value, gpu_value, cpu_exc, gpu_exc)
        if cpu_exc is not None:
            raise cpu_exc
        return cpu_value

    def _why_not(self, bound: list[Any]) -> str:
        if _current_test.rsplit("::", 1)[-1].split("[")[0] in OBSERVES_THE_BUILD:
            return "the test counts builds or cache entries, which a CUDA build changes"
        if os.getpid() != _MAIN_PID:
            return "in a forked child (a CUDA context does not survive fork)"
        arrays = [a for a in bound if isinstance(a, tack.Array)]
        for name, a in zip(self._cpu.params, bound, strict=False):
            if not isinstance(a, tack.Array) and not _is_scalar(a):
                return (f"argument '{name}' is a {type(a).__name__}, not a tack.Array "
                        "or a scalar (the launch raises TypeError on any device)")
        if not arrays:
            return "no array argument (a kernel of scalars runs on the CPU)"
        for a in arrays:
            if a.device.backend != "cpu":
                return f"an argument is already on {a.device}"
        stored = set(self._cpu.compile.ir.stored)
        for name, a in zip(self._cpu.params, bound, strict=False):
            if isinstance(a, tack.Array) and not a.writable and name in stored:
                return ("a read-only array bound to a parameter the kernel stores to "
                        "(refused before launch; to_device copies are writable)")
        spans = sorted({(a.ptr, a.nbytes) for a in arrays if a.nbytes})
        for (p0, n0), (p1, _) in zip(spans, spans[1:], strict=False):
            if p1 < p0 + n0 and p1 != p0:
                return "arguments overlap in memory without being one buffer"
        views = {}
        for a in arrays:
            if a.nbytes and views.setdefault((a.ptr, a.nbytes), a.dtype) != a.dtype:
                return "arguments view one buffer as different dtypes"
        return ""

    def _compare(self, bound: list[Any], copies: list[Any], cpu_value: Any,
                 gpu_value: Any, cpu_exc: BaseException | None,
                 gpu_exc: BaseException | None) -> None:
        if not same_exception(cpu_exc, gpu_exc):
            _record("mismatch", self, f"CPU: {exception_text(cpu_exc)}; CUDA: "
                    f"{exception_text(gpu_exc)}")
            return
        if cpu_exc is not None:
            _record("compared", self)  # the same exception; arrays may be half done
            return
        facts = self.facts(bound)
        if facts is None:
            _record("mismatch", self, "both launches ran, but the front end refuses "
                    "to spell the signature the plugin computed")
            return
        perturb = self.__name__ == PERTURB
        n = max((a.size for a in bound if isinstance(a, tack.Array)), default=1)
        triples = [(n, a, g) for n, a, g in zip(self._cpu.params, bound, copies,
                                                strict=False) if isinstance(a, tack.Array)]
        try:
            what = compare_arrays(facts, [t[0] for t in triples], [t[1] for t in triples],
                                   [t[2] for t in triples], perturb and cpu_value is None,
                                   n)
        except tack.TackError as e:  # a failed launch shows at the read-back
            what = f"reading the CUDA arrays back failed: {exception_text(e)}"
        if not what:
            if perturb and isinstance(gpu_value, float):
                gpu_value = math.nextafter(gpu_value, math.inf)
            elif perturb and isinstance(gpu_value, int):
                gpu_value += 1
            what = compare_values(facts, cpu_value, gpu_value, n)
        _record("mismatch" if what else "compared", self, what)


def _device_copies(bound: list[Any]) -> list[Any]:
    """bound with every tack.Array copied to CUDA; one buffer stays one buffer (the
    same array twice, or views of one buffer)."""
    device = tack.device("cuda")
    by_buffer: dict[tuple[int, int], Any] = {}
    out = []
    for a in bound:
        if not isinstance(a, tack.Array):
            out.append(a)
            continue
        key = (a.ptr, a.nbytes)
        if a.nbytes and key in by_buffer:
            first = by_buffer[key]
            # _why_not saw to one dtype per buffer
            out.append(first if first.shape == a.shape else first.reshape(a.shape))
            continue
        g = a.to_device(device)
        by_buffer[key] = g
        out.append(g)
    return out


def _kernel(fn: Any = None, *, debug: bool | None = None, source: Any = None) -> Any:
    if fn is None:
        return lambda f: _kernel(f, debug=debug, source=source)
    cpu = _original_kernel(fn, debug=debug, source=source)
    return _Checked(cpu, _original_kernel(fn, debug=debug, source=source))


tack.kernel = _kernel


# ---- pytest hooks -----------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _current_test
    _current_test = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Fails a test that passed on the CPU when one of its launches differed."""
    try:
        result = yield
    finally:
        seen = _failures.pop(item.nodeid, [])
    if seen:
        raise AssertionError("the CUDA launch differs from the CPU launch:\n"
                             + "\n".join(seen))
    return result


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.path.exists(EVENTS):
        os.unlink(EVENTS)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.getpid() != _MAIN_PID:
        return
    events = []
    if os.path.exists(EVENTS):
        with open(EVENTS, encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
    kinds = Counter(e["kind"] for e in events)
    skipped = Counter(e["reason"] for e in events if e["kind"] == "skipped")
    summary = {
        "launches": len(events),
        "compared": kinds["compared"],
        "mismatches": [{k: e[k] for k in ("kernel", "file", "line", "test", "reason")}
                       for e in events if e["kind"] == "mismatch"],
        "skipped": [{"reason": r, "launches": n} for r, n in skipped.most_common()],
    }
    with open(SUMMARY, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
