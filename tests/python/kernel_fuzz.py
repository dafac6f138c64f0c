"""A differential fuzzer of the kernel compiler (docs/kernels.md, "The fuzzer").

Each seed gives a random kernel module (kernel_fuzz_gen.py) that runs three ways:
on Tack's CPU path, as Python (kernel_fuzz_ref.py: the module's own source with the
documented differences from Python modelled) and, for the seeds chosen to, as its
CUDA module under the host emulation (cuda_emulator.py) and on Level Zero arrays,
its SPIR-V executed by the stand-in driver on Intel's OpenCL CPU runtime
(level_zero_fuzz.py). The results are compared by the rules of the differential
test (cuda_compare.py; OpenCL's bounds for Level Zero).

    python tests/python/kernel_fuzz.py --seed 0 --count 200 [--emulate-every 4]
        [--level-zero-every 4] [--enable FEATURE ...] [--disable FEATURE ...]

prints a reproducer, made smaller by dropping statements, for every mismatch, and
exits 1 when there was one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_compare
import kernel_fuzz_gen as gen
import kernel_fuzz_ref as ref
from cuda_emulator import emulate, gxx_available

import tack
from tack.kernel import generate_cuda, generate_source, stream


class _Host:
    """A NumPy array where cuda_compare expects a tack.Array."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def numpy(self) -> np.ndarray:
        return self.a


def signature(args: list[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(("array", a.dtype.name, a.ndim))
        elif isinstance(a, np.float32):
            out.append("float32")
        elif isinstance(a, bool):
            out.append("bool")
        elif isinstance(a, float):
            out.append("float")
        else:
            out.append("int")
    return tuple(out)


_loaded = 0
# What the runs so far did: kernels run, CUDA modules emulated, emulations left out
# because int64 arithmetic wrapped (the known fault `cuda_int_overflow`), kernels left
# out because their results read the sign of a NaN that arithmetic made.
STATS: Counter[str] = Counter()


def load(case: gen.Case, workdir: Path) -> Any:
    """The case's module, written to a file and imported (the front end reads a
    kernel's source from its file)."""
    global _loaded
    _loaded += 1
    path = workdir / f"fuzz_seed{case.seed}_{_loaded}.py"
    path.write_text(case.source(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"kernel_fuzz_case_{_loaded}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def _relabel(msg: str, other: str) -> str:
    return msg.replace("CUDA", other)


def on_device(k: Any, args: list[Any], device: Any = None) -> tuple[list[np.ndarray], Any]:
    """k launched on copies of args on device (the CPU by default)."""
    tk = [tack.array(a.copy(), device=device) if isinstance(a, np.ndarray) else a
          for a in args]
    result = k(*tk)
    return [a.numpy() for a in tk if isinstance(a, tack.Array)], result


def on_python(case: gen.Case, path: Path, model: ref.Model | None = None) -> tuple[
        list[np.ndarray], Any, ref.Model]:
    model = model or ref.Model()
    ns = ref.reference_module(case.source(), str(path), model)
    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    with np.errstate(all="ignore"):
        result = ns["fuzz_kernel"](*ref.ref_args(arrays))
    return [a for a in arrays if isinstance(a, np.ndarray)], ref.plain_result(result), model


_EMULATED_RESULT = {1: int, 2: float, 3: bool}


def on_emulator(k: Any, case: gen.Case, workdir: Path) -> tuple[list[np.ndarray], Any]:
    ck = generate_cuda(k, signature(case.args), debug=False)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    rec = emulate(ck, args, workdir, grid=3, block=4)
    kind = _EMULATED_RESULT.get(ck.result_kind)
    result = None if kind is None else kind(rec.result_f if kind is float else rec.result_i)
    return [a for a in args if isinstance(a, np.ndarray)], result


def compare(facts: cuda_compare.Facts, names: list[str], want: list[np.ndarray],
            want_result: Any, got: list[np.ndarray], got_result: Any, n: int,
            other: str, perturb: bool = False,
            alternatives: list[tuple[list[np.ndarray], Any]] = ()) -> list[str]:
    """The mismatches of got against want, as text; alternatives: other (arrays,
    result) pairs the other side may give, each element and the result matched
    against any of them (cuda_compare.compare_arrays)."""
    out = []
    msg = cuda_compare.compare_arrays(facts, names, [_Host(a) for a in want],
                                      [_Host(a) for a in got], perturb, n,
                                      [arrays for arrays, _ in alternatives])
    if msg:
        out.append(_relabel(msg, other))
    if want_result is not None or got_result is not None:
        msg = cuda_compare.compare_values(facts, want_result, got_result, n)
        if msg and not any(cuda_compare.compare_values(facts, r, got_result, n) == ""
                           for _, r in alternatives):
            out.append(_relabel(msg, other))
    return out


@contextlib.contextmanager
def streaming_forced(case: gen.Case) -> Any:
    """For an even seed, TACK_STREAM_MIN_BYTES=0 while the CPU path compiles: every
    loop that may stream does, whatever the size of its array (stream.py), so the
    streamed loops run on the fuzzer's small arrays; odd seeds keep the default."""
    if case.seed % 2:
        yield
        return
    before = os.environ.get(stream.ENV)
    os.environ[stream.ENV] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[stream.ENV]
        else:
            os.environ[stream.ENV] = before


def check(case: gen.Case, workdir: Path, perturb: bool = False) -> list[str]:
    """Runs one case three ways; the mismatches, as text (empty: all agree)."""
    try:
        mod, path = load(case, workdir)
        k = mod.fuzz_kernel
        with streaming_forced(case):
            cpu, cpu_result = on_device(k, case.args)
            src = generate_source(k, signature(case.args), debug=False)
            if "tk_stream_line(tk_nt_dst" in src and "UINT64_C(0))" in src:
                STATS["streamed"] += 1  # a loop that streamed, whatever its size
    except Exception as exc:  # a generated kernel is valid: any failure is a fault
        return [f"the CPU path raised {type(exc).__name__}: {exc}"]
    try:
        py, py_result, model = on_python(case, path)
    except Exception:
        return ["the Python reference raised (a fault of the fuzzer):\n"
                + traceback.format_exc(limit=-3)]
    sig = signature(case.args)
    facts = k.compile.spell(cuda_compare.Facts, sig, False)
    names = [p for p, a in zip(case.params, case.args, strict=True)
             if isinstance(a, np.ndarray)]
    # the regrouping bound's term count: every element, several terms per trip
    n = 8 * max(a.size for a in case.args if isinstance(a, np.ndarray))
    out = compare(facts, names, cpu, cpu_result, py, py_result, n, "Python", perturb)
    if out and (facts.math32 or facts.math64) and not perturb and not model.nan_sign_read:
        # a run that read a NaN's sign is left out below, by that rule alone
        out = compare(facts, names, cpu, cpu_result, py, py_result, n, "Python", perturb,
                      folded_math(case, path))
    STATS["kernels"] += 1
    emulated = case.emulate and gxx_available()
    if emulated and model.wrapped and "cuda_int_overflow" not in case.features:
        STATS["emulation left out: int64 wrapped"] += 1
        emulated = False
    if emulated:
        STATS["emulated"] += 1
        try:
            emu, emu_result = on_emulator(k, case, workdir)
        except Exception as exc:
            return [*out, f"the CUDA module failed under emulation: {exc}"]
        out += compare(facts, names, cpu, cpu_result, emu, emu_result, n,
                       "the CUDA emulation", perturb)
    if out and model.nan_sign_read:
        # the results read a sign that arithmetic leaves unspecified (docs/kernels.md,
        # "Where kernels differ from Python"): a difference there is no fault
        STATS["left out: the sign of a NaN was read"] += 1
        return []
    return out


# The math functions glibc does not round correctly. GCC computes a call whose
# arguments are constants when it compiles (MPFR, correctly rounded), and glibc's
# own result may be an ulp from that: tgammaf(3.0f) is 2.0000002 in glibc 2.36,
# where the folded call gives 2.0 (seed 200929).
FOLDED_INEXACT = {name: (1.0, 1.0) for name in (
    "cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh "
    "tanh asinh acosh atanh erf erfc gamma lgamma pow atan2 hypot").split()}
FOLDED_INEXACT.update({name: (0.0, 0.0) for name in
                       "sqrt fabs copysign fmod remainder nextafter".split()})


def folded_math(case: gen.Case, path: Path) -> list[tuple[list[np.ndarray], Any]]:
    """The Python reference's (arrays, result) with every inexact math result one ulp
    below libm's, and one ulp above (kernel_fuzz_ref.Model): what the CPU gives where
    the compiler folded a call that libm rounds the other way. A difference that
    matches one of them is explained, as on Level Zero; a run that raises is left
    out."""
    runs = []
    for nudge in (-1, 1):
        try:
            arrays, result, _ = on_python(case, path, ref.Model(nudge, FOLDED_INEXACT))
        except Exception:  # any failure: no alternative
            continue
        runs.append((arrays, result))
    return runs


def reads_a_nan_sign(case: gen.Case, workdir: Path) -> bool:
    """Whether the case's Python reference passes a NaN as `math.copysign`'s sign,
    which arithmetic leaves unspecified (docs/kernels.md): a difference between two
    devices there is no fault. Counted in STATS when it does."""
    try:
        _, _, model = on_python(case, load(case, workdir)[1])
    except Exception:  # the reference's own faults are check()'s to report
        return False
    if model.nan_sign_read:
        STATS["left out: the sign of a NaN was read"] += 1
    return model.nan_sign_read


def minimize(case: gen.Case, workdir: Path) -> gen.Case:
    """Drops statements (body blocks, then prelude blocks, then func definitions stay)
    while the case still mismatches."""
    def kind(msgs: list[str]) -> str:
        """What went wrong, so a smaller case fails the same way: the exception's
        name, or the comparison that failed."""
        return ",".join(m.split(":")[0] if "raised" in m or "failed" in m else
                        "returned" if m.startswith("returned") else "argument"
                        for m in msgs)

    want = kind(check(case, workdir))

    def fails(c: gen.Case) -> bool:
        return kind(check(c, workdir)) == want

    for part in ("body", "prelude"):
        k = len(getattr(case, part)) - 1
        while k >= 0:
            blocks = getattr(case, part)
            trial = replace(case, **{part: blocks[:k] + blocks[k + 1:]})
            if fails(trial):
                case = trial
            k -= 1
    if case.tail and fails(replace(case, tail=[])):
        case = replace(case, tail=[])
    return case


def on_level_zero(seeds: list[int], features: frozenset[str], workdir: Path,
                  out: Any = None) -> list[tuple[gen.Case, list[str]]]:
    """seeds on Level Zero arrays against the CPU, their SPIR-V executed by the
    stand-in driver on Intel's OpenCL CPU runtime, in child processes
    (level_zero_fuzz.run_cases); the failing cases, not minimized (each trial would
    be a child). Where that cannot run, says why and runs none."""
    import level_zero_fuzz  # it builds on this module

    out = out or sys.stdout
    why = level_zero_fuzz.unavailable()
    STATS["level zero"] += 0
    if why:
        print(f"no Level Zero cases: {why}", file=out, flush=True)
        return []
    results, (_, by_twin) = level_zero_fuzz.run_cases(seeds, features,
                                                      workdir / "level_zero")
    STATS["level zero"] += len(seeds)
    if by_twin:
        results.setdefault(seeds[0], []).append(
            f"{by_twin} Level Zero launches ran on CPU twins, not as SPIR-V")
    failures = []
    for s in seeds:
        msgs = results.get(s)
        if msgs and all(m.startswith(level_zero_fuzz.COMPILER_CRASH) for m in msgs):
            # the runtime's fault (docs/kernels.md, "The fuzzer"): said, not failed
            STATS["level zero: the OpenCL compiler crashed"] += 1
            print(f"seed {s}: {msgs[0].splitlines()[0]}: not compared", file=out,
                  flush=True)
        elif msgs:
            case = gen.generate(s, features)
            failures.append((case, results[s]))
            print(report(case, results[s]), file=out, flush=True)
    return failures


def sweep(seed: int, count: int, features: frozenset[str], emulate_every: int,
          workdir: Path, shrink: bool = True, out: Any = None,
          level_zero_every: int = 0) -> list[tuple[gen.Case, list[str]]]:
    """Seeds seed .. seed+count-1; every emulate_every-th one also under the CUDA
    emulation, every level_zero_every-th one also on Level Zero (0: none). Returns
    the failing cases (minimized when shrink, but for Level Zero's)."""
    failures = []
    for s in range(seed, seed + count):
        case = gen.generate(s, features)
        case.emulate = emulate_every > 0 and s % emulate_every == 0
        msgs = check(case, workdir)
        if not msgs:
            continue
        if shrink:
            small = minimize(case, workdir)
            msgs = check(small, workdir) or msgs
            case = small
        failures.append((case, msgs))
        print(report(case, msgs), file=out or sys.stdout, flush=True)
    on = [s for s in range(seed, seed + count)
          if level_zero_every > 0 and s % level_zero_every == 0]
    if on:
        failures += on_level_zero(on, features, workdir, out)
    return failures


def report(case: gen.Case, msgs: list[str]) -> str:
    on = sorted(case.features - gen.DEFAULT_FEATURES)
    off = sorted(gen.DEFAULT_FEATURES - case.features)
    head = f"=== seed {case.seed}" + (f" (+{','.join(on)})" if on else "") + (
        f" (-{','.join(off)})" if off else "") + (" [emulated]" if case.emulate else "")
    return "\n".join([head, *("  " + m for m in msgs), "--- kernel module:",
                      case.source(), "--- arguments (in order):", case.arguments_text(),
                      ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--emulate-every", type=int, default=4,
                   help="also run every N-th seed's CUDA module under emulation (0: none)")
    p.add_argument("--level-zero-every", type=int, default=4,
                   help="also run every N-th seed on Level Zero, its SPIR-V executed "
                   "on Intel's OpenCL CPU runtime (0: none)")
    p.add_argument("--enable", nargs="*", default=[], choices=gen.FEATURES,
                   metavar="FEATURE", help="turn on features (known-broken included)")
    p.add_argument("--disable", nargs="*", default=[], choices=gen.FEATURES,
                   metavar="FEATURE")
    p.add_argument("--no-shrink", action="store_true")
    a = p.parse_args(argv)
    features = (gen.DEFAULT_FEATURES | set(a.enable)) - set(a.disable)
    with tempfile.TemporaryDirectory(prefix="tack-kernel-fuzz-") as tmp:
        failures = sweep(a.seed, a.count, frozenset(features), a.emulate_every,
                         Path(tmp), not a.no_shrink,
                         level_zero_every=a.level_zero_every)
    print(f"{a.count} kernels, {len(failures)} mismatching; runs: {dict(STATS)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
