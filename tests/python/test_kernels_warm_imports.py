"""A new process that loads a kernel from the disk cache imports nothing on its first
call, and nothing heavy on its way there: the warm path emits the kernel's source (the
cache key is a hash of it), so the emitter's header reading must stay cheap."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# The editable install's loader imports these at interpreter start-up, before tack;
# the script hides them so that an import of them by tack shows.
HIDDEN = ("importlib.resources",)

SCRIPT = textwrap.dedent(
    """
    import json, sys
    hidden = {hidden!r}
    for name in [m for m in sys.modules
                 if any(m == h or m.startswith(h + ".") for h in hidden)]:
        del sys.modules[name]
    for h in hidden:
        parent, _, leaf = h.rpartition(".")
        if parent in sys.modules and hasattr(sys.modules[parent], leaf):
            delattr(sys.modules[parent], leaf)
    start = set(sys.modules)
    import tack

    @tack.kernel
    def radius_squared(values, nx, ny):
        for i in range(values.shape[0]):
            x = float(i % nx) - float(nx - 1) * 0.5
            y = float((i // nx) % ny) - float(ny - 1) * 0.5
            values[i] = x * x + y * y

    v = tack.zeros(16, dtype=tack.f32)
    before = set(sys.modules)
    radius_squared(v, 4, 2)
    after = set(sys.modules)
    stats = tack._tack._kernel_stats()
    print(json.dumps({{"first_call": sorted(after - before),
                      "whole_path": sorted(after - start),
                      "compiles": stats["compiles"], "disk_hits": stats["disk_hits"],
                      "value": v.numpy().tolist()[5]}}))
    """
).format(hidden=HIDDEN)


def run_probe(script: Path, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_a_warm_first_call_imports_nothing(tmp_path: Path):
    script = tmp_path / "warm_probe.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    cold = run_probe(script, env)
    assert (cold["compiles"], cold["disk_hits"]) == (1, 0)
    warm = run_probe(script, env)
    assert (warm["compiles"], warm["disk_hits"]) == (0, 1)  # really a cache hit
    assert warm["value"] == 0.5  # i = 5: x = 1 - 1.5, y = 1 - 0.5
    assert warm["first_call"] == []
    for name in HIDDEN:
        assert not [m for m in warm["whole_path"] if m == name or
                    m.startswith(name + ".")], warm["whole_path"]
