"""DLPack exchange cost: Tack beside NumPy, JAX and PyTorch (where installed), in
one process, printed as ratios to np.from_dlpack(numpy_array) measured in the same
run (these machines are noisy; absolute times mean little).

    .venv/bin/python benchmarks/bench_dlpack.py [--n 200000] [--repeat 7]

Each line is the best of --repeat runs of --n calls, in ns per call, including the
release of the result (the producer's deleter runs inside the loop).
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

import tack


def best_ns(fn, n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter_ns()
        fn(n)
        t1 = time.perf_counter_ns()
        gc.enable()
        best = min(best, (t1 - t0) / n)
    return best


def looped(call, arg):
    def run(n):
        for _ in range(n):
            call(arg)

    return run


def cases():
    x = np.arange(256, dtype=np.float32)
    a = tack.array(x)
    out = [
        ("np.from_dlpack(numpy)", looped(np.from_dlpack, x), "baseline"),
        ("tack.from_dlpack(numpy)", looped(tack.from_dlpack, x), "tack"),
        ("np.from_dlpack(tack)", looped(np.from_dlpack, a), "tack"),
        ("tack.from_dlpack(tack)", looped(tack.from_dlpack, a), "tack"),
        ("round trip numpy->numpy->numpy",
         looped(lambda v: np.from_dlpack(np.from_dlpack(v)), x), "peer"),
        ("round trip tack->numpy->tack",
         looped(lambda v: tack.from_dlpack(np.from_dlpack(v)), a), "tack"),
        ("round trip numpy->tack->numpy",
         looped(lambda v: np.from_dlpack(tack.from_dlpack(v)), x), "tack"),
        ("tack.from_dlpack(capsule)",
         looped(lambda v: tack.from_dlpack(v.__dlpack__(max_version=(1, 3))), x), "info"),
    ]
    try:
        import jax.numpy as jnp

        j = jnp.arange(256, dtype=jnp.float32)
        out += [
            ("jnp.from_dlpack(numpy)", looped(jnp.from_dlpack, x), "peer"),
            ("jnp.from_dlpack(tack)", looped(jnp.from_dlpack, a), "peer"),
            ("tack.from_dlpack(jax)", looped(tack.from_dlpack, j), "tack"),
            ("np.from_dlpack(jax)", looped(np.from_dlpack, j), "peer"),
        ]
    except ImportError:
        print("JAX not installed: its lines are left out")
    try:
        import torch

        t = torch.arange(256, dtype=torch.float32)
        out += [
            ("torch.from_dlpack(numpy)", looped(torch.from_dlpack, x), "peer"),
            ("torch.from_dlpack(tack)", looped(torch.from_dlpack, a), "peer"),
            ("tack.from_dlpack(torch)", looped(tack.from_dlpack, t), "tack"),
            ("np.from_dlpack(torch)", looped(np.from_dlpack, t), "peer"),
        ]
    except ImportError:
        print("PyTorch not installed: its lines are left out")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    todo = cases()
    best = {name: float("inf") for name, _, _ in todo}
    for _, fn, _ in todo:
        fn(10_000)  # warm up
    # Rounds over every case, best of each: drift on a shared machine hits all alike.
    for _ in range(args.repeat):
        for name, fn, _ in todo:
            slow = "jax" in name or "jnp" in name
            n = max(args.n // 20, 1000) if slow else args.n
            best[name] = min(best[name], best_ns(fn, n, 1))
    results = [(name, best[name], kind) for name, _, kind in todo]
    base = next(ns for name, ns, kind in results if kind == "baseline")
    print(f"{'operation':38s} {'ns/call':>9s} {'vs np.from_dlpack(numpy)':>26s}")
    for name, ns, kind in results:
        mark = ""
        if kind == "tack" and not name.startswith("round trip"):
            mark = "  faster" if ns < base else "  SLOWER"
        print(f"{name:38s} {ns:9.1f} {ns / base:25.2f}x{mark}")
    rt = {name: ns for name, ns, _ in results if name.startswith("round trip")}
    peer = rt["round trip numpy->numpy->numpy"]
    for name, ns in rt.items():
        if "tack" in name:
            print(f"{name} vs NumPy's own round trip: {ns / peer:.2f}x")


if __name__ == "__main__":
    main()
