"""scripts/ensure_tools.sh, which `make test` runs first: what it says and does when a
tool is missing.

A tool is hidden by running the script with a PATH of mirrors of this PATH's folders
that leave it out; stand-ins for `id` (root or not) and `apt-get` (which records its
arguments) come first, so the script never runs the real apt.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure_tools.sh"
LLVM = "14"


def _run(tmp_path: Path, hidden: tuple[str, ...], uid: int,
         group: str = "test") -> tuple[subprocess.CompletedProcess, Path]:
    """Runs the script with the hidden tools left out of PATH, as uid. The apt-get
    stand-in puts them back when asked to install anything. Returns the result and the
    stand-in's log."""
    fake = tmp_path / "fake"
    fake.mkdir(parents=True)
    log = tmp_path / "apt.log"
    (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    restore = ""
    for name in hidden:
        real = shutil.which(name)
        assert real, f"{name} is not installed here, so it cannot be hidden"
        restore += f'[ "$1" = install ] && ln -s "{real}" "{fake}/{name}"\n'
    (fake / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n{restore}exit 0\n')
    for stand_in in ("id", "apt-get"):
        (fake / stand_in).chmod(0o755)
    folders = [str(fake)]
    for k, folder in enumerate(os.environ["PATH"].split(os.pathsep)):
        if not os.path.isdir(folder):
            continue
        mirror = tmp_path / f"path{k}"
        mirror.mkdir()
        for name in os.listdir(folder):
            if name not in hidden and name not in ("id", "apt-get"):
                os.symlink(os.path.join(folder, name), mirror / name)
        folders.append(str(mirror))
    env = dict(os.environ, PATH=os.pathsep.join(folders), PYTHON=sys.executable,
               LLVM_VERSION=LLVM)
    env.pop("LD_PRELOAD", None)  # the sanitized pytest's runtimes stay out of the compilers
    result = subprocess.run(["bash", str(SCRIPT), group], env=env, capture_output=True,
                            text=True, timeout=120)
    return result, log


# Each tool and its Debian packages (the LLVM ones pinned: lint's output depends on
# the version).
PACKAGES = {
    "shellcheck": "shellcheck",
    "valgrind": "valgrind",
    "cppcheck": "cppcheck",
    "pkg-config": "pkgconf",
    f"clang-format-{LLVM}": f"clang-format-{LLVM}",
    f"clang-tidy-{LLVM}": f"clang-tidy-{LLVM}",
    f"clang-{LLVM}": f"clang-{LLVM} libclang-rt-{LLVM}-dev",
    "g++": "g++",
    "clang-15": "clang-15",
    "llvm-spirv-15": "llvm-spirv-15",
    "spirv-val": "spirv-tools",
}


def test_without_root_it_names_the_packages_and_the_command_and_fails(tmp_path):
    result, log = _run(tmp_path, tuple(PACKAGES), uid=1000)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    for tool, packages in PACKAGES.items():
        noun = "packages" if " " in packages else "package"
        assert any(tool in line and line.endswith(f"Debian {noun}: {packages}")
                   for line in lines), (tool, result.stderr)
    command = [line for line in lines if "sudo apt-get install -y" in line]
    assert len(command) == 1, result.stderr
    assert command[0].strip().startswith("sudo apt-get update && ")
    named = command[0].split("install -y", 1)[1].split()
    for packages in PACKAGES.values():
        assert set(packages.split()) <= set(named), (packages, command[0])
    assert not log.exists()  # apt was never run


def test_as_root_it_installs_the_missing_package_and_checks_again(tmp_path):
    result, log = _run(tmp_path, ("shellcheck",), uid=0)
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    assert calls == ["update -q", "install -y -q --no-install-recommends shellcheck"]


def test_with_everything_present_it_installs_nothing(tmp_path):
    for group in ("setup", "test"):
        result, log = _run(tmp_path / group, (), uid=0, group=group)
        assert result.returncode == 0, result.stderr
        assert not log.exists()


def test_setup_checks_only_what_make_setup_needs(tmp_path):
    result, log = _run(tmp_path, ("shellcheck",), uid=1000, group="setup")
    assert result.returncode == 0, result.stderr
    assert "shellcheck" not in result.stderr


def test_an_unknown_group_is_refused(tmp_path):
    result, _ = _run(tmp_path, (), uid=1000, group="everything")
    assert result.returncode == 2
    assert "usage:" in result.stderr
