"""Every ```python block of README.md and docs/ runs as written.

Each block runs as a script of its own, in a fresh interpreter whose working directory
is an empty temporary folder, so a block can use only what it imports or defines
itself. A block that shows a fragment is a bug in the documentation: make it whole.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# An opening fence, indented or not (a block inside a list item), to its closing fence.
FENCE = re.compile(r"^([ \t]*)```python[ \t]*\n(.*?)^\1```[ \t]*$", re.MULTILINE | re.DOTALL)


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blocks() -> list:
    found = []
    for doc in _documents():
        text = doc.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 2  # the block's first line
            name = f"{doc.relative_to(ROOT)}:{line}"
            found.append(pytest.param(textwrap.dedent(match.group(2)), id=name))
    return found


BLOCKS = _blocks()


def test_the_documents_have_python_blocks():
    # The extraction itself: a changed fence syntax must not make every test vanish.
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("source", BLOCKS)
def test_python_block_runs(tmp_path: Path, source: str):
    script = tmp_path / "block.py"
    script.write_text(source, encoding="utf-8")
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, f"the block failed:\n{source}\n{out.stderr}"
