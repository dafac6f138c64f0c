"""Streaming stores: which inner loops of a CPU kernel write their array a whole
cache line at a time past the cache.

A kernel that writes an array larger than the last-level cache gains nothing from
keeping what it writes in the cache: by the time it finishes, the first lines are
gone. An ordinary store still reads each line before writing it (a third of a
Jacobi sweep's memory traffic). A non-temporal store of a whole aligned line skips
that read. The C emitter spells a streamed loop in three parts (CEmitter.streamed):
plain trips until the store reaches a 64-byte boundary, blocks of trips (strips of
STRIP bytes, then single lines) that compute their values into a local buffer and
write it with streaming stores, and plain trips for the rest.

That is the same computation only when the blocks may compute a line's values
before storing any of them. So a loop streams only when all of these hold:
- it is in the restrict body (no stored array overlaps another argument: the
  runtime checked the byte ranges), outside debug mode;
- its body is declarations and assignments of locals, then one unguarded store, and
  nothing else (no loop, branch, call, update, failure check);
- nothing in it calls a func, updates memory (an atomic or plain update helper),
  may fail (a helper given the launch record: debug mode's checks) or reads the
  array it stores to: the helpers left are pure functions of their arguments;
- the store's index moves by exactly one element per trip (stride 1), reading no
  local the trip before left, so the line's elements are the block's trips in
  order.

Whether a loop streams at run time is one more test: the stored array holds at
least stream_min_bytes() (the last-level cache's size unless TACK_STREAM_MIN_BYTES
says otherwise; the value is part of the source, so each setting has its own
cached build). TACK_STREAM_MIN_BYTES=0 streams every loop that may, whatever its
size: the fuzzer's way to run that path on small arrays.
"""

from __future__ import annotations

import dataclasses
import os

from tack.kernel import lir
from tack.kernel.ir import INT, DtypeFacts

LINE = 64  # bytes of one streamed block: an x86-64 cache line
# bytes of one strip: sixteen lines computed by one loop that GCC vectorises as it
# does the plain loop (a loop of one line's eight trips it unrolls, building its
# vectors from single loads), small enough to stay in L1. One thread's Jacobi sweep
# against hand C (benchmarks/RESULTS.md): 1.33x-1.40x with 1024 bytes, 1.28x-1.30x
# with 512, 0.95x-0.97x with 2048, 1.06x-1.13x for the plain loop.
STRIP = 1024
ENV = "TACK_STREAM_MIN_BYTES"
# When the cache's size is unknown (sysconf has no answer): larger than most.
DEFAULT_MIN_BYTES = 32 << 20

_cache_bytes: int | None = None


def last_level_cache_bytes() -> int:
    """The largest cache's size that sysconf reports (read once), or
    DEFAULT_MIN_BYTES."""
    global _cache_bytes
    if _cache_bytes is None:
        found = 0
        for name in ("SC_LEVEL4_CACHE_SIZE", "SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
            try:
                found = max(found, int(os.sysconf(name)))
            except (ValueError, OSError):
                pass
        _cache_bytes = found if found > 0 else DEFAULT_MIN_BYTES
    return _cache_bytes


def stream_min_bytes() -> int:
    """The size from which a stored array's loops stream: TACK_STREAM_MIN_BYTES (a
    count of bytes, 0: always, 2**64 - 1 or more: never) or the last-level cache's
    size. A value that is not a count is refused with ValueError rather than
    guessed at."""
    text = os.environ.get(ENV)
    if text is None or text.strip() == "":
        return last_level_cache_bytes()
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{ENV}={text!r}: expected a count of bytes (0 or more), "
                         "the array size from which kernels write with streaming stores")
    return min(value, 2**64 - 1)  # more than any array holds: never


@dataclasses.dataclass
class Streamed:
    """A loop that streams (lir.Loop ``loop``): its body before the store
    (``before``), the store, the stored array's element type and the name of its
    element count (a setup declaration)."""

    loop: lir.Loop
    before: list[lir.Stmt]
    store: lir.Store
    elem: DtypeFacts
    size: str

    @property
    def width(self) -> int:
        """Elements of one line."""
        return LINE // (self.elem.itemsize // self.elem.components)

    @property
    def strip(self) -> int:
        """Elements of one strip."""
        return STRIP // (self.elem.itemsize // self.elem.components)


# nodes a streamed trip's expressions may hold: pure, and nothing that can fail
_PURE = (lir.Lit, lir.Ref, lir.Arg, lir.Bin, lir.Un, lir.Cast, lir.Cond, lir.Math,
         lir.Index, lir.Let)
CTX = "tk_ctx"  # the launch record's name (lower.CTX): a helper given it may fail


# the integer operators whose strides add and scale (/ and % of integers are helpers)
_STRIDE_OPS = {"+", "-", "*"}


def _pure(n: lir.Expr) -> bool:
    """Whether n computes a value and nothing else: no update, no failure, no call."""
    if isinstance(n, _PURE):
        return True
    return (isinstance(n, lir.Helper) and not n.name.startswith(("atomic_", "plain_"))
            and not any(isinstance(a, lir.Ref) and a.name == CTX for a in n.args))


def streamable(loop: lir.Loop, arrays: dict[str, lir.ArrayDecl],
               declared: set[str]) -> Streamed | None:
    """The streamed form of loop, or None where streaming would not be the same
    computation (module docstring). arrays: the kernel's array pointers by name;
    declared: the names the setup declares (the stored array's element count
    must be one of them)."""
    body = [s for s in loop.body if not isinstance(s, lir.Line)]
    if not body or not isinstance(body[-1], lir.Store):
        return None
    store = body[-1]
    last = max(k for k, s in enumerate(loop.body) if not isinstance(s, lir.Line))
    before = loop.body[:last]
    array = arrays.get(store.base)
    size = store.base + "_size"
    if store.guard is not None or array is None or array.const or size not in declared:
        return None
    values: list[tuple[str, lir.Expr]] = []
    for s in body[:-1]:
        if isinstance(s, lir.Decl):
            values.append((s.name, s.init if s.init is not None else lir.Lit(0, INT)))
        elif isinstance(s, lir.Assign):
            values.append((s.name, s.value))
        else:
            return None
    for n in lir.walk([[v for _, v in values], store.index, store.value]):
        if isinstance(n, lir.Expr) and not _pure(n):
            return None
        if isinstance(n, lir.Ref) and n.name == store.base:
            return None
    # Each local's stride, in the body's order. A local read before the body
    # assigns it holds the last trip's value (carried), so its stride is unknown.
    strides: dict[str, int | None] = {name: None for name, _ in values}
    known: dict[str, int | None] = {}
    for name, value in values:
        if name in known:
            return None  # assigned twice in one trip
        known[name] = _stride(value, loop.var, {**strides, **known})
    if _stride(store.index, loop.var, known) != 1:
        return None
    return Streamed(loop, before, store, array.elem, size)


def _stride(e: lir.Expr, var: str, locals_: dict[str, int | None]) -> int | None:
    """How much the integer e moves when the loop counter var moves by one, where
    locals_ gives the stride of each local the loop body assigns (None: unknown);
    None where that is not known. Lowering's + - * wrap modulo 2**64, and so do
    these strides: e(k + 1) - e(k) is the stride for every k."""
    if isinstance(e, lir.Ref):
        if e.name == var:
            return 1
        return locals_.get(e.name, 0) if e.name in locals_ else 0
    if isinstance(e, (lir.Lit, lir.Arg)):
        return 0
    if isinstance(e, lir.Bin) and e.op in _STRIDE_OPS:
        a = _stride(e.a, var, locals_)
        b = _stride(e.b, var, locals_)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if a == 0 and b == 0:
            return 0
        # a product moves in step only when the other factor is a literal
        if b == 0 and isinstance(e.b, lir.Lit) and type(e.b.value) is int:
            return a * e.b.value
        if a == 0 and isinstance(e.a, lir.Lit) and type(e.a.value) is int:
            return b * e.a.value
        return None
    if isinstance(e, lir.Un) and e.op == "-":
        s = _stride(e.x, var, locals_)
        return None if s is None else -s
    # any other node is invariant only when it mentions neither the counter nor a
    # local the body assigns
    names = {var, *locals_}
    if any(isinstance(n, lir.Ref) and n.name in names for n in lir.walk(e)):
        return None
    return 0
