"""A fixed set of kernel specializations for tests that look at generated source
without running it: twenty of the fuzzer's seeds (kernel_fuzz_gen.py) and a few kernels
written here for what the fuzzer does not make (serial kernels with a result,
integer and bool reductions, restrict bodies, float16, a func with a local array).

``specializations(seeds)`` gives each as (label, kernel, signature, debug), in a
fixed order and with fixed file names, so that the source of every one depends only
on the compiler. Run as a script, it prints the digest of the set's CUDA sources, and with --write
stores it in DIGEST_FILE (do that only for a deliberate change of the CUDA code):

    .venv/bin/python tests/python/kernel_suite_sources.py [--seeds N] [--dump DIR]
                                                          [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import linecache
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernel_fuzz
import kernel_fuzz_gen as gen

from tack import KernelError
from tack.kernel.emit_cuda import emit_cuda
from tack.kernel.lower import CPU, CUDA, Target, for_target

# The fuzzer's seeds in the set. Together with EXTRA they take every step from one
# line to the next of the emitters (emit_c, emit_grid, emit_cuda, emit_opencl, lir,
# lower) that the first 200 seeds take, at a tenth of their source: 0, 3, 7, 54,
# 120 and 183 for the steps (3 is a return of 512 reductions, 183 a loop nest with
# the block tree), and the smallest others for variety of expressions. Sweep a
# wider range with --seeds N when the emitters grow a path none of these takes.
SEEDS = (0, 3, 7, 9, 12, 16, 23, 26, 42, 43, 54, 65, 86, 120, 125, 161, 165, 178, 183,
         196)
# The emitters spell the plans here outside the front end's own deeper limit
# (tack.kernel._DEPTH_LIMIT): the set has expressions nested hundreds deep.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
# The digest of the set's CUDA sources, as test_kernels_targets.py checks it.
DIGEST_FILE = Path(__file__).resolve().parent / "kernel_suite_cuda.digest"

EXTRA = '''
import math
import tack

@tack.func
def scaled(a, i, s):
    t = tack.local_array((4,), tack.f64)
    for j in range(4):
        t[j] = a[i] * s + j
    return t[0] + t[3]

@tack.kernel
def serial_result(a, n):
    s = 0
    for i in range(n):
        s += a[i] if a[i] > 0 or i == 0 else -a[i]
    return s

@tack.kernel
def reductions(a, b):
    lo = 1e300
    hi = -1e300
    c = 0
    ok = True
    f = 0.0
    for i in range(a.shape[0]):
        lo = min(lo, a[i])
        hi = max(hi, a[i])
        c += 1 if a[i] > 0 else 0
        ok = ok and a[i] == a[i]
        f += a[i] * b[i]
    return lo + hi + c + f if ok else 0.0

@tack.kernel
def restricted(out, x, y, s):
    for i in range(out.shape[0]):
        out[i] = scaled(x, i, s) + y[i] * (x[i] or y[i])
        tack.atomic_add(out, 0, 1.0)

@tack.kernel
def halves(h, o):
    for i in range(h.shape[0]):
        o[i] = math.sqrt(abs(float(h[i]))) + h[i] // 2.0

@tack.kernel
def grid(m, v):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            v[i] = v[i] + m[i, j] * float(j % 3 or 1)
'''

EXTRA_SIGNATURES: dict[str, list[tuple[Any, ...]]] = {
    "serial_result": [(("array", "int64", 1), "int"), (("array", "float32", 1), "int")],
    "reductions": [(("array", "float64", 1), ("array", "float64", 1)),
                   (("array", "float32", 1), ("array", "int32", 1))],
    "restricted": [(("array", "float64", 1), ("array", "float64", 1),
                    ("array", "float64", 1), "float")],
    "halves": [(("array", "float16", 1), ("array", "float16", 1))],
    "grid": [(("array", "float32", 2), ("array", "float64", 1))],
}


def _module(text: str, filename: str) -> dict[str, Any]:
    """text run as a module of file filename (linecache holds its lines, so the
    front end reads its kernels' text as from a file)."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": Path(filename).stem}
    exec(compile(text, filename, "exec"), ns)
    return ns


def specializations(seeds: Collection[int] = SEEDS,
                    ) -> Iterator[tuple[str, Any, tuple[Any, ...], bool]]:
    """(label, kernel, signature, debug) for the fixed set (the fuzzer's kernels of
    seeds, then EXTRA's), both debug modes."""
    for seed in seeds:
        case = gen.generate(seed)
        ns = _module(case.source(), f"kernel_suite_seed{seed}.py")
        sig = kernel_fuzz.signature(case.args)
        for debug in (False, True):
            yield f"seed{seed} debug={debug}", ns["fuzz_kernel"], sig, debug
    ns = _module(EXTRA, "kernel_suite_extra.py")
    for name, sigs in EXTRA_SIGNATURES.items():
        for sig in sigs:
            for debug in (False, True):
                yield f"{name} {sig!r} debug={debug}", ns[name], sig, debug


def plans(seeds: Collection[int] = SEEDS) -> Iterator[tuple[str, Any]]:
    """(label, the plan lowered for the CPU, which every target's plan is a form
    of: lower.for_target) for every specialization the front end accepts (a
    KernelError is a kernel the set does not hold)."""
    for label, k, sig, debug in specializations(seeds):
        try:
            yield label, k.compile.spell(lambda plan: plan, sig, debug, CPU)
        except KernelError:
            continue


def sources(emit: Callable[[Any], str], target: Target,
            items: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, str]]:
    """(label, emit(the plan for target)) for each of items (plans())."""
    for label, plan in items:
        yield label, emit(for_target(plan, target))


def cuda_source(plan: Any) -> str:
    return emit_cuda(plan).source


def digest(items: Iterable[tuple[str, str]]) -> tuple[str, int]:
    """sha256 over every (label, source), and how many there were."""
    h = hashlib.sha256()
    n = 0
    for label, text in items:
        h.update(f"{label}\n{len(text)}\n".encode())
        h.update(text.encode())
        n += 1
    return h.hexdigest(), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, metavar="N",
                    help="the fuzzer's seeds 0 .. N-1 instead of SEEDS")
    ap.add_argument("--dump", type=Path, help="also write each source to DIR")
    ap.add_argument("--write", action="store_true", help=f"store it in {DIGEST_FILE.name}")
    a = ap.parse_args(argv)
    seeds = SEEDS if a.seeds is None else range(a.seeds)
    items = list(sources(cuda_source, CUDA, plans(seeds)))
    if a.dump:
        a.dump.mkdir(parents=True, exist_ok=True)
        for n, (label, text) in enumerate(items):
            (a.dump / f"{n:04d}.cu").write_text(f"// {label}\n{text}", encoding="utf-8")
    value, count = digest(items)
    print(f"{value} {count}")
    if a.write:
        if a.seeds is not None:
            ap.error("--write stores the digest of the fixed set (SEEDS): drop --seeds")
        DIGEST_FILE.write_text(f"{value} {count}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
