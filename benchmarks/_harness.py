"""The benchmarks' shared harness: timing, tables, and `make bench`'s process runs.

A benchmark script fills a Report with tables (a title, rows, and cells in named
columns, each cell a number with a unit) and ends with `finish`, which prints them
and, under --json PATH, writes them for the runner. Every script takes --smoke (tiny
sizes, one round: proves it runs, measures nothing).

Run as a program, this module is `make bench`:

    .venv/bin/python benchmarks/_harness.py [--runs 3] [--only dlpack,kernels] [--smoke]

It runs every benchmark this machine can run, each --runs times in a new process
(one whose needs are missing, such as a CUDA device, is skipped with the reason),
and prints every table with each cell as the median and the range (min-max) over
the runs, under the machine (lscpu's model name, the core count), the load average
and the command. Ratios are computed within each run, then summarised: a ratio's
median is the median of the per-run ratios, not the ratio of the medians.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# ---- timing ---------------------------------------------------------------------------


def best_s(fn: Callable[[], Any], repeat: int) -> float:
    """The shortest of `repeat` timed calls of fn, in seconds, with the garbage
    collector off while timing (its pauses are not the code's). fn's result is
    released inside the timing."""
    best = math.inf
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter()
        r = fn()
        del r
        t1 = time.perf_counter()
        gc.enable()
        best = min(best, t1 - t0)
    return best


def looped(call: Callable[[Any], Any], arg: Any) -> Callable[[int], None]:
    """A function of n that makes n calls of call(arg): one timed region per n."""

    def run(n: int) -> None:
        for _ in range(n):
            call(arg)

    return run


def per_call_ns(run: Callable[[int], None], n: int) -> float:
    """ns per call of one timed run(n), the garbage collector off."""
    gc.disable()
    t0 = time.perf_counter_ns()
    run(n)
    t1 = time.perf_counter_ns()
    gc.enable()
    return (t1 - t0) / n


def interleaved_best(cases: Sequence[tuple[str, Callable[[], float]]],
                     rounds: int) -> dict[str, float]:
    """The smallest of `rounds` measurements of each case, taken in rounds over all
    cases: the load on a shared machine drifts, and interleaving spreads it over
    every case alike. Each case is a function that measures once and returns it."""
    best = {name: math.inf for name, _ in cases}
    for _ in range(rounds):
        for name, measure in cases:
            best[name] = min(best[name], measure())
    return best


# ---- reports --------------------------------------------------------------------------


class Report:
    """Tables of one process run, in the order their cells were first added."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.tables: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []

    def add(self, table: str, row: str, column: str, value: float | None,
            unit: str) -> None:
        """One cell. unit is "ms", "ns", "us", "x" (a ratio) or "" (a count); None
        is a cell without a value (a peer that cannot do the row)."""
        t = self.tables.setdefault(table, {"columns": [], "units": {}, "rows": {}})
        if column not in t["units"]:
            t["columns"].append(column)
            t["units"][column] = unit
        t["rows"].setdefault(row, {})[column] = value

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"note: {text}")

    def as_json(self) -> dict[str, Any]:
        return {"script": self.script, "notes": self.notes,
                "tables": [{"title": k, **v} for k, v in self.tables.items()]}


def arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Adds the options every benchmark takes: --smoke and --json."""
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes and one round: proves the script runs")
    parser.add_argument("--json", help="also write the tables as JSON to this path")
    return parser


def finish(report: Report, args: argparse.Namespace) -> None:
    """Prints the report's tables and writes them to --json if given."""
    print_tables([(t["title"], t, lambda v: [v]) for t in report.as_json()["tables"]])
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_json(), indent=1))


def fmt(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "":
        return f"{value:.3g}"
    if unit == "ns" and abs(value) >= 1e4:
        value, unit = value / 1e3, "us"
    digits = 1 if abs(value) >= 100 else 2
    return f"{value:.{digits}f} {unit}"


def cell_text(values: list[float | None], unit: str) -> str:
    """One value as it is; several as median (min-max)."""
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    if len(got) == 1:
        return fmt(got[0], unit)
    lo, mid, hi = min(got), statistics.median(got), max(got)
    return f"{fmt(mid, unit)} ({fmt(lo, unit)} - {fmt(hi, unit)})"


def print_tables(tables: list[tuple[str, dict[str, Any], Callable[[Any], list]]]
                 ) -> None:
    """Prints each table as a Markdown table; cells(value) gives a cell's values."""
    for title, t, cells in tables:
        cols = t["columns"]
        lines = [["", *cols]]
        for row, vals in t["rows"].items():
            lines.append([row, *(cell_text(cells(vals.get(c)), t["units"][c])
                                 for c in cols)])
        widths = [max(len(line[k]) for line in lines) for k in range(len(cols) + 1)]
        print(f"\n### {title}\n")
        for k, line in enumerate(lines):
            print("| " + " | ".join(s.ljust(w) for s, w in zip(line, widths, strict=True))
                  + " |")
            if k == 0:
                print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


# ---- make bench: every benchmark, several process runs ------------------------------


def cuda_missing() -> str | None:
    probe = subprocess.run([sys.executable, "-c", "import tack; tack.device('cuda')"],
                           capture_output=True, text=True, check=False)
    if probe.returncode == 0:
        return None
    last = (probe.stderr.strip().splitlines() or ["tack.device('cuda') failed"])[-1]
    return f"no CUDA device ({last})"


def nvrtc_missing() -> str | None:
    probe = subprocess.run([sys.executable, "-c", "import tack._tack as t; "
                            "t._nvrtc_version()"], capture_output=True, text=True,
                           check=False)
    return None if probe.returncode == 0 else "NVRTC cannot be loaded"


def tool(name: str) -> str | None:
    """A program beside this interpreter (the virtual environment's), else on PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def mpi_missing() -> str | None:
    if not tool("mpiexec"):
        return "mpiexec not found"
    probe = subprocess.run([sys.executable, "-c", "import mpi4py.MPI"],
                           capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else "mpi4py cannot be imported"


# name: (script, the program it runs under, why it cannot run here or None)
BENCHMARKS: dict[str, tuple[str, list[str], Callable[[], str | None]]] = {
    "arrays": ("bench_arrays.py", [], lambda: None),
    "dlpack": ("bench_dlpack.py", [], lambda: None),
    "kernels": ("bench_kernels.py", [], lambda: None),
    "nvrtc": ("bench_nvrtc.py", [], nvrtc_missing),
    "mpi": ("bench_mpi.py", ["mpiexec", "-n", "2"], mpi_missing),
    "cuda": ("bench_cuda.py", [], cuda_missing),  # with bench_cuda_kernels.py
}


def machine() -> str:
    model = "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True,
                             check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def command(script: str, prefix: list[str], *extra: str) -> list[str]:
    """The command line of one process run of a benchmark."""
    runner = [tool(prefix[0]) or prefix[0], *prefix[1:]] if prefix else []
    return [*runner, sys.executable, str(HERE / script), *extra]


def run_one(script: str, prefix: list[str], extra: list[str], env: dict[str, str]
            ) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tack-bench-") as d:
        out = os.path.join(d, "report.json")
        cmd = command(script, prefix, *extra, "--json", out)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not os.path.exists(out):
            tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                               + "\n".join(tail))
        return json.loads(Path(out).read_text())


def merge(runs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Tables of several runs of one script, each cell the list of its values."""
    merged: dict[str, dict[str, Any]] = {}
    for r in runs:
        for t in r["tables"]:
            m = merged.setdefault(t["title"], {"columns": [], "units": {}, "rows": {}})
            for c in t["columns"]:
                if c not in m["units"]:
                    m["columns"].append(c)
                    m["units"][c] = t["units"][c]
            for row, vals in t["rows"].items():
                cells = m["rows"].setdefault(row, {})
                for c, v in vals.items():
                    cells.setdefault(c, []).append(v)
    return list(merged.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Every benchmark, several process "
                                     "runs each, as min/median/max tables.")
    parser.add_argument("--runs", type=int,
                        default=int(os.environ.get("BENCH_RUNS", "3")))
    parser.add_argument("--only", default=",".join(BENCHMARKS),
                        help="comma-separated subset of " + ", ".join(BENCHMARKS))
    parser.add_argument("--smoke", action="store_true",
                        help="each benchmark at its smoke size")
    parser.add_argument("--script-args", default="",
                        help="arguments passed on to each benchmark script, such as "
                        "\"--only histogram --threads 2\" for bench_kernels.py")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    print(f"machine: {machine()}; load average at start: {load()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])} "
          f"(runs: {args.runs}, each a new process; cells: median (min-max))")
    failed = 0
    for name in args.only.split(","):
        script, prefix, missing = BENCHMARKS[name]
        why = missing()
        print(f"\n## {name}: benchmarks/{script}")
        if why:
            print(f"skipped: {why}")
            continue
        runs = []
        for _ in range(args.runs):
            try:
                extra = ["--smoke"] if args.smoke else []
                runs.append(run_one(script, prefix,
                                    [*extra, *shlex.split(args.script_args)], env))
            except RuntimeError as e:
                print(e)
                failed += 1
                break
        for note in sorted({n for r in runs for n in r["notes"]}):
            print(f"note: {note}")
        print_tables([(title, t, lambda v: v or [None]) for title, t in merge(runs)])
        print(f"\nload average after {name}: {load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
