"""Prints the C sources of the static runtime (meson.build's runtime_sources, as
the configured build BUILD_DIR holds them), one a line, relative to the current
folder, so that the fuzzer is built from the same list as the library and the C
tests:

    python tests/fuzz/runtime_sources.py BUILD_DIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def runtime_sources(build_dir: str) -> list[str]:
    meson = Path(sys.executable).with_name("meson")
    out = subprocess.run([str(meson), "introspect", "--targets", build_dir],
                         capture_output=True, text=True, check=True).stdout
    for target in json.loads(out):
        if target["name"] == "tack" and target["type"] == "static library":
            return [os.path.relpath(src) for part in target["target_sources"]
                    for src in part.get("sources", []) if src.endswith(".c")]
    raise SystemExit(f"{build_dir} has no static library 'tack': configure it with "
                     "-Dtests=true (make configure-c)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print("\n".join(runtime_sources(sys.argv[1])))
