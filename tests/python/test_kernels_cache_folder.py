"""The kernel cache folder when it cannot be used: read-only, full, or missing a
compiler. Kernels still build, in a private temporary folder, the user is told once
with a RuntimeWarning, and the cache folder is left without partial files.

Read-only and full folders are real tmpfs mounts, made in a private user and mount
namespace (unshare), so no test needs root and nothing outlives the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tack

# Runs in the namespace: $1 tmpfs options, $2 mount point, then shell commands ($PY
# is the interpreter, $MNT the mount point).
WRAPPER = 'mount -t tmpfs -o "$1" tmpfs "$2"; export MNT="$2"; shift 2; eval "$@"'

# Two kernels (two compiles); prints what the run saw, checks the results.
KERNELS = textwrap.dedent(
    """
    import json
    import os
    import sys
    import warnings

    import numpy as np

    import tack

    os.environ["TACK_CACHE_DIR"] = os.environ["MNT"]

    @tack.kernel
    def ones(out):
        for i in range(out.shape[0]):
            out[i] = 1.0

    @tack.kernel
    def twos(out):
        for i in range(out.shape[0]):
            out[i] = 2.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = tack.zeros(100)
        ones(a)
        b = tack.zeros(100)
        twos(b)
    np.testing.assert_array_equal(a.numpy(), np.ones(100))
    np.testing.assert_array_equal(b.numpy(), np.full(100, 2.0))
    stats = tack._tack._kernel_stats()
    print(json.dumps({
        "warnings": [str(w.message) for w in caught
                     if issubclass(w.category, RuntimeWarning)],
        "files": sorted(os.listdir(os.environ["MNT"])),
        "compiles": stats["compiles"],
        "disk_hits": stats["disk_hits"],
    }))
    """
)

# Fills the mount until the disk is full, then frees $1 bytes.
FILL = textwrap.dedent(
    """
    import os
    import sys

    path = os.path.join(os.environ["MNT"], "filler")
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError:
            pass
    os.truncate(path, max(0, os.path.getsize(path) - int(sys.argv[1])))
    """
)


@pytest.fixture(scope="module")
def namespaces() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are not available: {probe.stderr!r}")


def in_tmpfs(tmp_path: Path, options: str, commands: str) -> list[dict]:
    """Runs shell commands with a fresh tmpfs mounted at tmp_path/mnt; returns what
    each KERNELS run printed."""
    import json

    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "fill.py").write_text(FILL)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = dict(os.environ, PY=sys.executable, K=str(tmp_path / "kernels.py"),
               FILL=str(tmp_path / "fill.py"), TMPDIR=str(tmp_path))
    env.pop("TACK_CACHE_DIR", None)
    out = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-ec", WRAPPER, "sh",
         options, str(mnt), commands],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_read_only_cache_folder_falls_back_with_one_warning(namespaces, tmp_path):
    (run,) = in_tmpfs(tmp_path, "ro,mode=0700", '"$PY" "$K"')
    assert len(run["warnings"]) == 1, run["warnings"]
    assert str(tmp_path / "mnt") in run["warnings"][0]
    assert "Read-only file system" in run["warnings"][0]  # the reason, from the OS
    assert run["compiles"] == 2
    assert not list(tmp_path.glob("tack-*"))  # the temporary folders are removed


def test_full_cache_folder_falls_back_and_leaves_no_partial_files(namespaces, tmp_path):
    (run,) = in_tmpfs(tmp_path, "size=256k,mode=0700", '"$PY" "$FILL" 0 && "$PY" "$K"')
    assert len(run["warnings"]) == 1, run["warnings"]
    assert "No space left on device" in run["warnings"][0]
    assert run["files"] == ["filler"]


def test_nearly_full_cache_folder_falls_back_and_leaves_no_partial_files(
        namespaces, tmp_path):
    # Room for the source but not for the compiled object: the compiler fails. Three
    # pages: the source is about 8 KiB (the prelude, and this script's path in each
    # #line), the object about 15 KiB. Two pages left no slack: a longer temporary
    # path or a few more lines of prelude made the source itself the write that
    # failed.
    (run,) = in_tmpfs(tmp_path, "size=256k,mode=0700",
                      '"$PY" "$FILL" 12288 && "$PY" "$K"')
    assert len(run["warnings"]) == 1, run["warnings"]
    assert "nearly full" in run["warnings"][0]
    assert run["files"] == ["filler"]


def test_read_only_cache_folder_still_serves_its_kernels(namespaces, tmp_path):
    first, second = in_tmpfs(
        tmp_path, "mode=0700",
        '"$PY" "$K" && mount -o remount,ro "$MNT" && "$PY" "$K"')
    assert first["warnings"] == [] and first["compiles"] == 2
    assert second["warnings"] == []
    assert second["compiles"] == 0 and second["disk_hits"] == 2


def test_missing_compiler_says_so_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CC", "/nonexistent/tack-no-cc")
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path / "cache"))

    @tack.kernel
    def k(out):
        out[0] = 1.0

    with pytest.raises(tack.CompileError) as info:
        k(tack.zeros(1))
    message = str(info.value)
    assert "tack-no-cc" in message
    assert message.count("no C compiler") == 1, message


def test_shared_cache_folder_keeps_its_mode(tmp_path: Path):
    # TACK_CACHE_DIR=/tmp must not lock other users out of /tmp: a folder Tack did
    # not create keeps its mode, and the cache goes into a private folder inside it.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    script = tmp_path / "one_kernel.py"
    script.write_text(textwrap.dedent(
        """
        import tack

        @tack.kernel
        def ones(out):
            for i in range(out.shape[0]):
                out[i] = 1.0

        a = tack.zeros(10)
        ones(a)
        assert a.numpy().tolist() == [1.0] * 10
        """))
    env = dict(os.environ, TACK_CACHE_DIR=str(shared))
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", str(script)],
                         env=env, capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert shared.stat().st_mode & 0o7777 == 0o1777
    private = shared / f"tack-{os.geteuid()}"
    assert private.stat().st_mode & 0o7777 == 0o700
    assert len(list(private.glob("*.so"))) == 1
