"""Fuzzer kernels (kernel_fuzz_gen.py) on Level Zero arrays against the CPU, through
the real loader on the strict stand-in driver, compared by the rules of the
differential test with OpenCL's bounds (cuda_compare.OPENCL).

The loader and the stand-in read their environment once per process, before Tack
opens the loader, so a batch of seeds runs in one child interpreter
(level_zero_helpers.run), which prints one line per seed (LINE, then JSON: the seed
and its mismatches) and, last, how many launches the stand-in ran as SPIR-V and as
CPU twins; on stderr it names each seed as it starts (STARTS), so the stand-in's
complaints, and a crash, are put down to their seed. Under
``TACK_STANDIN_ZE_EXECUTE=spirv`` every launch must have run its SPIR-V on Intel's
OpenCL CPU runtime; ``twin`` computes them with the CPU twins.

``TACK_FUZZ_LEVEL_ZERO_PERTURB=1`` in the child changes the first element of the
Level Zero side's first array by one unit in the last place before the comparison:
the test that a difference is caught.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cuda_compare
import kernel_fuzz
import kernel_fuzz_gen as gen
import kernel_fuzz_ref as ref
import level_zero_helpers
import numpy as np
import opencl_cpu_runtime

import tack
from tack.kernel.lower import OPENCL

HERE = Path(__file__).resolve().parent
LINE = "level-zero-case "
STARTS = "level-zero-starts "  # on stderr, so complaints follow their seed
# seeds per child: a case takes a second or less, a child may take two minutes
BATCH = 25
EXECUTED = "level-zero-executed "
# The message of a seed whose module crashed Intel's OpenCL runtime in its own
# compiler (LLVM's stack dump, which names the pass, on the child's stderr): a fault
# of the runtime, not of Tack, and nothing of the seed was compared.
COMPILER_CRASH = "Intel's OpenCL runtime crashed in its own compiler"

_CHILD = """
sys.path.insert(0, {here!r})
import level_zero_fuzz
level_zero_fuzz.child({seeds!r}, {features!r}, {work!r})
"""


def unavailable() -> str:
    """Why Level Zero cases cannot run SPIR-V here ("" when they can)."""
    if opencl_cpu_runtime.library_dir() is None:
        return ("Intel's OpenCL CPU runtime is not installed (make setup installs it), "
                "so the stand-in cannot execute SPIR-V")
    if ctypes.util.find_library("ze_loader") is None:
        return "the Level Zero loader is missing: install libze1 (scripts/ensure_tools.sh)"
    try:
        level_zero_helpers.standin_library()
    except RuntimeError as e:
        return str(e)
    return ""


def run_cases(seeds: list[int], features: frozenset[str], workdir: Path,
              mode: str = "plain", execute: str = "spirv",
              **env: str) -> tuple[dict[int, list[str]], tuple[int, int]]:
    """Runs seeds in children in the loader's mode, at most BATCH to a child (which
    must finish within level_zero_helpers.run's time limit): each seed's
    mismatches, and the launches the stand-in ran (by SPIR-V, by twin). A stand-in
    complaint is a mismatch of the seed it came in; a child that dies or hangs is
    one of the seed it was running, and the seeds after it run in a new child."""
    results: dict[int, list[str]] = {}
    spirv = twin = 0
    rest = list(seeds)
    while rest:
        got, (s, t) = _child(rest[:BATCH], features, workdir, mode, execute, env)
        results.update(got)
        spirv, twin = spirv + s, twin + t
        rest = [seed for seed in rest if seed not in results]
    return results, (spirv, twin)


def _child(seeds: list[int], features: frozenset[str], workdir: Path, mode: str,
           execute: str, env: dict[str, str]) -> tuple[dict[int, list[str]],
                                                       tuple[int, int]]:
    workdir.mkdir(parents=True, exist_ok=True)
    code = _CHILD.format(here=str(HERE), seeds=list(seeds),
                         features=sorted(features), work=str(workdir))
    try:
        # every complaint allowed here: each is made the mismatch of its seed below
        r = level_zero_helpers.run(code, mode, expect=("",), check=False,
                                   TACK_STANDIN_ZE_EXECUTE=execute,
                                   TACK_CACHE_DIR=str(workdir / "cache"), **env)
        out, err, ended = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, ended = _text(e.stdout), _text(e.stderr), "a timeout"
    results: dict[int, list[str]] = {}
    executed = (0, 0)
    for line in out.splitlines():
        if line.startswith(LINE):
            one = json.loads(line[len(LINE):])
            results[one["seed"]] = one["msgs"]
        elif line.startswith(EXECUTED):
            spirv, twin = line[len(EXECUTED):].split()
            executed = (int(spirv), int(twin))
    seed = None
    for line in err.splitlines():
        if line.startswith(STARTS):
            seed = int(line[len(STARTS):])
        elif line.startswith("standin-ze:") and not line.startswith("standin-ze: note:"):
            results.setdefault(seed if seed is not None else seeds[0], []).append(
                f"the stand-in complained: {line}")
    if ended != 0:
        dead = next((s for s in seeds if s not in results), seeds[-1])
        if "Stack dump:" in err and "Running pass" in err:
            results.setdefault(dead, []).append(
                f"{COMPILER_CRASH} building this seed's module (the child ended "
                f"{ended}); its last output:\n{err[-1500:]}")
        else:
            results.setdefault(dead, []).append(
                f"the Level Zero child ended ({ended}) while running this seed; its "
                f"last output:\n{err[-1500:]}")
    return results, executed


def _text(b: bytes | str | None) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def _outcome(k: Any, args: list[Any], device: Any) -> tuple[Any, Any, BaseException | None]:
    try:
        arrays, result = kernel_fuzz.on_device(k, args, device)
    except Exception as e:  # compared with the other side's
        return None, None, e
    return arrays, result, None


def check_case(case: gen.Case, workdir: Path, device: Any, perturb: bool = False) -> list[str]:
    """One case on the CPU and on device (a Level Zero device); the mismatches. An
    exception raised the same way on both is no mismatch here (kernel_fuzz.check
    reports a generated kernel that raises on the CPU)."""
    mod, path = kernel_fuzz.load(case, workdir)
    k = mod.fuzz_kernel
    cpu, cpu_result, cpu_exc = _outcome(k, case.args, tack.device("cpu"))
    ze, ze_result, ze_exc = _outcome(k, case.args, device)
    if cpu_exc is not None or ze_exc is not None:
        if cpu_exc is not None and cuda_compare.same_exception(cpu_exc, ze_exc):
            return []
        return [f"CPU: {cuda_compare.exception_text(cpu_exc)}; Level Zero: "
                f"{cuda_compare.exception_text(ze_exc)}"]
    facts = k.compile.spell(cuda_compare.OPENCL.facts, kernel_fuzz.signature(case.args),
                            False, OPENCL)
    names = [p for p, a in zip(case.params, case.args, strict=True)
             if isinstance(a, np.ndarray)]
    n = 8 * max(a.size for a in case.args if isinstance(a, np.ndarray))
    out = kernel_fuzz.compare(facts, names, cpu, cpu_result, ze, ze_result, n,
                              "Level Zero", perturb)
    if out and (facts.math32 or facts.math64) and not perturb:
        # OpenCL's math may round a result differently from libm within its bound,
        # and a `%` or a comparison after it can turn an ulp into any value: what
        # matches the reference with the device's math one ulp off is explained.
        out = kernel_fuzz.compare(facts, names, cpu, cpu_result, ze, ze_result, n,
                                  "Level Zero", perturb, _one_ulp_off(case, path))
    if out and kernel_fuzz.reads_a_nan_sign(case, workdir):
        return []  # a sign arithmetic leaves unspecified (kernel_fuzz.check)
    return out


def _one_ulp_off(case: gen.Case, path: Path) -> list[tuple[list[np.ndarray], Any]]:
    """The Python reference's (arrays, result) with OpenCL's inexact math one ulp
    below libm's and one ulp above (kernel_fuzz_ref.Model); a run that raises is
    left out (it explains nothing)."""
    runs = []
    for nudge in (-1, 1):
        try:
            arrays, result, _ = kernel_fuzz.on_python(
                case, path, ref.Model(nudge, cuda_compare.OPENCL.bounds))
        except Exception:  # any failure: no alternative
            continue
        runs.append((arrays, result))
    return runs


def _executed() -> tuple[int, int]:
    lib = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"].split(",")[0])
    spirv, twin = ctypes.c_uint64(), ctypes.c_uint64()
    lib.tack_standin_ze_executed(ctypes.byref(spirv), ctypes.byref(twin))
    return spirv.value, twin.value


def child(seeds: list[int], features: list[str], work: str) -> None:
    """The child's part: every seed on the loader's first Level Zero device."""
    device = tack.device("level_zero")
    perturb = os.environ.get("TACK_FUZZ_LEVEL_ZERO_PERTURB") == "1"
    for seed in seeds:
        print(STARTS + str(seed), file=sys.stderr, flush=True)
        case = gen.generate(seed, frozenset(features))
        try:
            msgs = check_case(case, Path(work), device, perturb)
        except Exception as e:  # a fault of the harness or of Tack: reported, not lost
            msgs = [f"checking on Level Zero raised {type(e).__name__}: {e}"]
        print(LINE + json.dumps({"seed": seed, "msgs": msgs}), flush=True)
    print(EXECUTED + " ".join(map(str, _executed())), flush=True)
