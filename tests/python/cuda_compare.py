"""The comparison rules of the differential tests (cuda_differential.py for CUDA,
test_level_zero_differential.py and the fuzzer for Level Zero): what counts as the
same result on the CPU and on a device. docs/kernels.md, "The differential test",
states them; each device's math library bounds are read from that document's tables
(CUDA's, OpenCL's), so the rule and its documentation cannot drift apart.
"""

from __future__ import annotations

import importlib
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

_lir = importlib.import_module("tack.kernel.lir")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"


def math_bounds(heading: str) -> dict[str, tuple[float, float]]:
    """The table of docs/kernels.md that follows heading: name -> (float32 ulp,
    float64 ulp), the upper end of a range, the stated bound where a note follows
    it. "*exact*" is the row of the arithmetic operators."""
    bounds: dict[str, tuple[float, float]] = {}
    text = DOCS.read_text("utf-8")
    table = text[text.index(heading):]
    for line in table.splitlines()[1:]:
        if line.startswith("|---") or line.startswith("| function"):
            continue
        if not line.startswith("|"):
            if bounds:
                break
            continue
        names, f32, f64 = (c.strip() for c in line.strip("|").split("|"))
        ulps = [max(float(n) for n in re.findall(r"\d+(?:\.\d+)?", c.split("(")[0]))
                for c in (f32, f64)]
        for name in re.findall(r"`([a-z0-9]+|/)`|\(([a-z0-9]+)\)", names):
            for n in name:
                if n:
                    bounds[n] = (ulps[0], ulps[1])
        if "`+ - *" in names:
            bounds["*exact*"] = (ulps[0], ulps[1])
    if "sin" not in bounds or "*exact*" not in bounds:
        raise RuntimeError(f"no table '{heading}' of math function bounds in {DOCS}")
    return bounds


class Rules:
    """One device's math library: its table of bounds in docs/kernels.md, and the
    device's name in a mismatch's text."""

    def __init__(self, device: str, heading: str) -> None:
        self.device = device
        self.bounds = math_bounds(heading)
        # the unknown (a function the table does not name): the column's largest
        self.worst = (max(b[0] for b in self.bounds.values()),
                      max(b[1] for b in self.bounds.values()))

    def facts(self, plan: Any) -> Facts:
        return Facts(plan, self)


CUDA = Rules("CUDA", "Maximum error of the math functions on CUDA")
# OpenCL's built-ins, as Level Zero's SPIR-V calls them
OPENCL = Rules("Level Zero", "Maximum error of the math functions on OpenCL")
BOUNDS, WORST = CUDA.bounds, CUDA.worst


def _float32_division(plan: Any) -> bool:
    """Whether the plan may divide float32 values: a `/` (always a float division
    in the kernel language's lowering) in a plan that holds a float32 value or
    array anywhere. Loose on purpose: lir's `/` carries no type."""
    divides = f32 = False
    for node in _lir.walk([plan.arrays, plan.setup, plan.iteration, plan.serial,
                           plan.functions]):
        if isinstance(node, _lir.Bin) and node.op == "/":
            divides = True
        for name in ("ty", "to", "elem"):
            t = getattr(node, name, None)
            if getattr(t, "name", None) in ("float32", "float16"):
                f32 = True
    return divides and f32


class Facts:
    """What the comparison needs to know of one specialization, under a device's
    rules (CUDA's by default)."""

    def __init__(self, plan: Any, rules: Rules = CUDA) -> None:
        self.device = rules.device
        self.ulp32 = self.ulp64 = 0.0  # bound of the math library calls, per precision
        self.math32 = self.math64 = False
        for node in _lir.walk([plan.setup, plan.iteration, plan.serial,
                               plan.functions]):
            if isinstance(node, _lir.Math) and not node.generic:
                b = rules.bounds.get(node.name, rules.worst)
                if node.ty.name == "float32":
                    self.math32, self.ulp32 = True, max(self.ulp32, b[0])
                else:
                    self.math64, self.ulp64 = True, max(self.ulp64, b[1])
        division = rules.bounds.get("/", (0, 0))[0]
        if division and _float32_division(plan):
            self.math32, self.ulp32 = True, max(self.ulp32, division)
        # float atomic adds land in the order the threads reach them, on either side
        self.atomics = plan.uses_atomics
        self.float_reduction = min(
            (53 if r.ty.name == "float64" else 24 for r in plan.reductions
             if r.ty.is_float), default=0) if plan.parallel else 0

    def tolerance(self, precision: int) -> tuple[float, int]:
        """(ulp, precision in bits) allowed between the two sides of a value of
        `precision` bits: twice the bound (each side may be that far from the truth)
        at the coarsest precision the math ran in."""
        if self.math32:
            return 2 * max(self.ulp32, self.ulp64), min(24, precision)
        if self.math64:
            return 2 * self.ulp64, precision
        return 0, precision


def float_diff(c: np.ndarray, g: np.ndarray, ulp: float, precision: int) -> np.ndarray:
    """Where float arrays c and g differ beyond ulp units of `precision` bits (NaN
    equals NaN; with no ulp allowed, bit for bit)."""
    nan = np.isnan(c) & np.isnan(g)
    if ulp == 0 and precision >= np.finfo(c.dtype).nmant + 1:
        ints = {2: np.int16, 4: np.int32, 8: np.int64}[c.dtype.itemsize]
        return (c.view(ints) != g.view(ints)) & ~nan
    coarse = np.float32 if precision <= 24 else np.float64
    if c.dtype.itemsize == 2:
        coarse = np.float16
    with np.errstate(invalid="ignore", over="ignore"):
        big = np.maximum(np.abs(c), np.abs(g)).astype(np.float64)
        spacing = np.spacing(big.astype(coarse)).astype(np.float64)
        delta = np.abs(c.astype(np.float64) - g.astype(np.float64))
        same = (c == g) | nan
        return ~same & ~(delta <= max(ulp, 1 if coarse is np.float16 else 0) * spacing)


def regrouping(n: int, precision: int) -> float:
    """2 * gamma(n - 1) in unit roundoff 2**-precision: the largest relative
    difference between two orders of a sum of n terms of one sign."""
    u, m = 2.0 ** -precision, max(n - 1, 1)
    return 2 * m * u / (1 - m * u)


def compare_arrays(facts: Facts, names: list[str], cpu: list[Any],
                    gpu: list[Any], perturb: bool, n: int,
                    alternatives: list[list[np.ndarray]] = ()) -> str:
    """The first array that differs, as text ("" when none does). alternatives:
    other results the device may give (each a list of arrays like cpu's); an element
    that matches one of them by the same rule is no difference."""
    for k, (name, c_arr, g_arr) in enumerate(zip(names, cpu, gpu, strict=True)):
        c, g = c_arr.numpy(), g_arr.numpy()
        if perturb and g.size:
            g = g.copy()
            flat = g.reshape(-1)
            flat[0] = np.nextafter(flat[0], np.inf) if g.dtype.kind == "f" else (
                not flat[0] if g.dtype.kind == "b" else flat[0] + 1)
            perturb = False
        mask = _differs(facts, c, g, n)
        for alt in alternatives:
            if mask.any():
                mask &= _differs(facts, alt[k], g, n)
        bad = int(np.count_nonzero(mask))
        if bad:
            first = int(np.flatnonzero(mask.reshape(-1))[0])
            return (f"argument '{name}' ({c.dtype}, shape {c.shape}): {bad} elements "
                    f"differ, first at flat index {first}: CPU {c.reshape(-1)[first]!r}"
                    f", {facts.device} {g.reshape(-1)[first]!r}")
    return ""


def _differs(facts: Facts, c: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    """Where g differs from c by the rules (module docstring)."""
    if c.dtype.kind != "f":
        return c != g
    ulp, precision = facts.tolerance(np.finfo(c.dtype).nmant + 1)
    mask = float_diff(c, g, ulp, precision)
    if facts.atomics and mask.any():  # atomic float adds regroup too
        big = np.maximum(np.abs(c), np.abs(g)).astype(np.float64)
        delta = np.abs(c.astype(np.float64) - g.astype(np.float64))
        mask &= ~(delta <= regrouping(n, np.finfo(c.dtype).nmant + 1) * big)
    return mask


def compare_values(facts: Facts, c: Any, g: Any, n: int) -> str:
    if isinstance(c, float) and isinstance(g, float):
        if c == g and math.copysign(1, c) == math.copysign(1, g):
            return ""
        if math.isnan(c) and math.isnan(g):
            return ""
        ulp, precision = facts.tolerance(53)
        u = 2.0 ** -precision
        tol = 2 * ulp * u * max(abs(c), abs(g))
        if facts.float_reduction:
            tol += regrouping(n, facts.float_reduction) * max(abs(c), abs(g))
        if abs(c - g) <= tol:
            return ""
        return (f"returned {c!r} on the CPU, {g!r} on {facts.device} (allowed "
                f"difference {tol:g})")
    if type(c) is not type(g) or c != g:
        return f"returned {c!r} on the CPU, {g!r} on {facts.device}"
    return ""


def exception_text(e: BaseException | None) -> str:
    return "no exception" if e is None else f"{type(e).__name__}: {e}"


def same_exception(a: BaseException | None, b: BaseException | None) -> bool:
    """Same type and message; a compiler log's private build folder (a random
    .tmpXXXXXX name in the cache) may differ, and so may the index of a debug-mode
    bounds failure: when several trips fail at once, the thread that claims the
    record first reports (docs/kernels.md, *What differs on the GPU*)."""
    def norm(e: BaseException | None) -> str:
        text = re.sub(r"\.tmp[A-Za-z0-9_]{6}\b", ".tmp", str(e))
        if isinstance(e, IndexError):
            text = re.sub(r"^index -?\d+ is out of bounds for axis", "index _ is out of "
                          "bounds for axis", text)
        return text
    return type(a) is type(b) and norm(a) == norm(b)
