"""DLPack exchange cost: Tack beside NumPy, JAX and PyTorch (where installed), in
one process, printed as ratios to np.from_dlpack(numpy_array) measured in the same
run (these machines are noisy; absolute times mean little).

    .venv/bin/python benchmarks/bench_dlpack.py [--n 200000] [--repeat 7] [--smoke]

Each line is the best of --repeat rounds of --n calls, in ns per call, including the
release of the result (the producer's deleter runs inside the loop). The rounds go
over every case in turn, so drift on a shared machine hits all alike. "vs peer" is
the ratio to the same exchange done by NumPy: a round trip to NumPy's own round
trip, an import from JAX to np.from_dlpack(jax).
"""

from __future__ import annotations

import argparse

import numpy as np
from _harness import Report, arguments, finish, interleaved_best, looped, per_call_ns

import tack

TABLE = "DLPack, ns per call"
BASE = "np.from_dlpack(numpy)"


def cases() -> tuple[list[tuple[str, object, str | None]], list[str]]:
    """(name, run(n), the NumPy exchange it is compared with) and the notes."""
    x = np.arange(256, dtype=np.float32)
    a = tack.array(x)
    rt = "round trip numpy->numpy->numpy"
    out = [
        (BASE, looped(np.from_dlpack, x), None),
        ("tack.from_dlpack(numpy)", looped(tack.from_dlpack, x), BASE),
        ("np.from_dlpack(tack)", looped(np.from_dlpack, a), BASE),
        ("tack.from_dlpack(tack)", looped(tack.from_dlpack, a), BASE),
        (rt, looped(lambda v: np.from_dlpack(np.from_dlpack(v)), x), None),
        ("round trip tack->numpy->tack",
         looped(lambda v: tack.from_dlpack(np.from_dlpack(v)), a), rt),
        ("round trip numpy->tack->numpy",
         looped(lambda v: np.from_dlpack(tack.from_dlpack(v)), x), rt),
        ("tack.from_dlpack(capsule)",
         looped(lambda v: tack.from_dlpack(v.__dlpack__(max_version=(1, 3))), x), None),
    ]
    notes = []
    try:
        import jax.numpy as jnp

        j = jnp.arange(256, dtype=jnp.float32)
        out += [
            ("np.from_dlpack(jax)", looped(np.from_dlpack, j), None),
            ("tack.from_dlpack(jax)", looped(tack.from_dlpack, j), "np.from_dlpack(jax)"),
            ("jnp.from_dlpack(numpy)", looped(jnp.from_dlpack, x), None),
            ("jnp.from_dlpack(tack)", looped(jnp.from_dlpack, a), "jnp.from_dlpack(numpy)"),
        ]
    except ImportError:
        notes.append("JAX not installed: its lines are left out")
    try:
        import torch

        t = torch.arange(256, dtype=torch.float32)
        out += [
            ("np.from_dlpack(torch)", looped(np.from_dlpack, t), None),
            ("tack.from_dlpack(torch)", looped(tack.from_dlpack, t),
             "np.from_dlpack(torch)"),
            ("torch.from_dlpack(numpy)", looped(torch.from_dlpack, x), None),
            ("torch.from_dlpack(tack)", looped(torch.from_dlpack, a),
             "torch.from_dlpack(numpy)"),
        ]
    except ImportError:
        notes.append("PyTorch not installed: its lines are left out")
    return out, notes


def main() -> None:
    parser = arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.repeat = 200, 1
    report = Report("bench_dlpack.py")
    todo, notes = cases()
    for text in notes:
        report.note(text)
    for _, fn, _ in todo:
        fn(10 if args.smoke else 10_000)  # warm up

    def measure(name, fn):
        slow = "jax" in name or "jnp" in name or "torch" in name
        n = max(args.n // 20, 10) if slow else args.n
        return lambda: per_call_ns(fn, n)

    best = interleaved_best([(name, measure(name, fn)) for name, fn, _ in todo],
                            args.repeat)
    for name, _, peer in todo:
        report.add(TABLE, name, "ns/call", best[name], "ns")
        report.add(TABLE, name, f"vs {BASE}", best[name] / best[BASE], "x")
        report.add(TABLE, name, "vs peer", best[name] / best[peer] if peer else None, "x")
    finish(report, args)


if __name__ == "__main__":
    main()
