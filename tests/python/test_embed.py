"""A C program that links libtack and embeds Python shares one runtime with tack.

`embed/host.c` is built here the way an in situ code builds: `python -m tack --cflags
--libs` for Tack and the interpreter's embedding flags for Python. Each test runs a
script inside it; the host's built-in module `host` is its C side (its field, the
release count of that field, tack_py_to_array, the C runtime's counters). The host
prints `releases=N` after finalization, when it has released everything it held.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import pytest
from cuda_helpers import _PRELUDE, FOREIGN_STREAM, standin_library

import tack

HERE = Path(__file__).resolve().parent
_hosts: dict[str, Path] = {}


def _embed_flags() -> list[str]:
    """What python3-config --embed --cflags --ldflags says, from sysconfig (the
    environment running the tests may have no python3-config of its own)."""
    v = sysconfig.get_config_var
    flags = [f"-I{sysconfig.get_paths()['include']}"]
    if v("Py_ENABLE_SHARED"):
        flags += [f"-L{v('LIBDIR')}", f"-Wl,-rpath,{v('LIBDIR')}"]
    else:
        flags += [f"-L{v('LIBPL')}", *(v("LINKFORSHARED") or "").split()]
    flags.append(f"-lpython{v('LDVERSION')}")
    return flags + (v("LIBS") or "").split() + (v("SYSLIBS") or "").split()


def _tack_flags(*options: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "tack", *options], check=True,
                         capture_output=True, text=True).stdout
    return out.split()


def build_host(libs: list[str] | None = None) -> Path:
    """Builds host.c against the package's libtack (or `libs`), once per flags."""
    key = " ".join(libs or [])
    if key in _hosts:
        return _hosts[key]
    out = Path(tempfile.mkdtemp(prefix="tack-embed-")) / "host"
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    cmd = [*cc, "-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
           str(HERE / "embed" / "host.c"), "-o", str(out),
           *_tack_flags("--cflags"), *(libs if libs is not None else _tack_flags("--libs")),
           *_embed_flags(), "-pthread", "-ldl",
           # A sanitized libtack (make sanitize-py) leaves its runtime to the preload.
           "-Wl,--allow-shlib-undefined"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stderr}"
    _hosts[key] = out
    return out


def run_host(script: str, tmp_path: Path, *, device: str = "cpu", host: Path | None = None,
             check: bool = True, env_base: dict[str, str] | None = None,
             **env: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    child_env = dict(os.environ if env_base is None else env_base)
    child_env.update(PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **env)
    result = subprocess.run([str(host or build_host()), sys.executable, str(path), device],
                            capture_output=True, text=True, env=child_env, timeout=120)
    if check:
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result


def releases(result: subprocess.CompletedProcess[str]) -> int:
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("releases="), result.stdout
    return int(last.split("=")[1])


def test_flags_name_the_library_the_extension_loads():
    cflags, libs = _tack_flags("--cflags"), _tack_flags("--libs")
    include = Path(tack.get_include())
    assert cflags == [f"-I{include}"]
    assert (include / "tack" / "tack.h").is_file()
    assert (include / "tack" / "python.h").is_file()
    assert (include / "tack" / "version.h").is_file()
    lib = Path(tack.get_library_dir())
    assert libs == [f"-L{lib}", "-ltack", f"-Wl,-rpath,{lib}"]
    assert Path(tack._tack._runtime_library()) == (lib / "libtack.so").resolve()
    assert _tack_flags("--includedir", "--libdir") == [str(include), str(lib)]


def test_pkg_config_gives_the_same_flags():
    env = dict(os.environ, PKG_CONFIG_PATH=_tack_flags("--pkgconfigdir")[0])
    out = subprocess.run(["pkg-config", "--cflags", "--libs", "tack"], env=env,
                         check=True, capture_output=True, text=True).stdout.split()

    def normal(flag: str) -> str:  # tack.pc's paths are relative to its own folder
        return flag[:2] + os.path.normpath(flag[2:]) if flag[:2] in ("-I", "-L") else flag

    assert [normal(f) for f in out] == _tack_flags("--cflags") + _tack_flags("--libs")[:2]


def test_python_m_tack_without_options_says_what_to_give():
    r = subprocess.run([sys.executable, "-m", "tack"], capture_output=True, text=True)
    assert r.returncode == 2 and "--cflags" in r.stderr


def test_the_host_and_python_share_one_runtime(tmp_path):
    r = run_host("""
        import numpy as np
        import host
        import tack

        # The same library file, so the same registry, hooks, pool and cache.
        assert host.runtime_library() == tack._tack._runtime_library()
        a = host.field()
        assert a.ptr == host.field_ptr() and a.shape == (16,)
        assert a.device == tack.device("cpu")
        ptr, same_device = host.hold(a)
        assert ptr == host.field_ptr() and same_device
        assert host.default_device_is_field_device()

        # Python's allocations go through the allocator the host installed.
        n = host.allocations()
        tack.zeros(1000)
        assert host.allocations() > n

        @tack.kernel
        def bump(x):
            for i in range(x.shape[0]):
                x[i] = x[i] + 1.0

        c0 = host.kernel_stats()
        bump(a)
        bump(a)
        c, p = host.kernel_stats(), tack._tack._kernel_stats()
        for k in ("compiles", "disk_hits", "memory_hits", "parallel_launches",
                  "serial_launches", "num_threads"):
            assert c[k] == p[k], (k, c, p)
        # The build Python asked for is counted in the C side's cache.
        builds = ("compiles", "disk_hits", "memory_hits")
        assert sum(c[k] for k in builds) == sum(c0[k] for k in builds) + 1, (c0, c)
        launches = c["parallel_launches"] + c["serial_launches"]
        assert launches == c0["parallel_launches"] + c0["serial_launches"] + 2
        assert (np.from_dlpack(a) == 2).all()
        """, tmp_path)
    assert releases(r) == 1


def test_release_runs_once_when_python_lets_go_last(tmp_path):
    r = run_host("""
        import numpy as np
        import host

        a = host.field()
        view = np.from_dlpack(a)
        host.drop_field()
        assert host.releases() == 0
        del a
        assert host.releases() == 0
        view[:] = 3  # the memory is still the host's field, alive
        del view
        assert host.releases() == 1
        """, tmp_path)
    assert releases(r) == 1


def test_release_runs_once_when_the_host_lets_go_last_on_its_own_thread(tmp_path):
    r = run_host("""
        import host

        a = host.field()
        b = a.reshape(4, 4)
        del a, b
        assert host.releases() == 0
        host.drop_field_on_thread()
        assert host.releases() == 1
        """, tmp_path)
    assert releases(r) == 1


def test_release_runs_once_when_a_python_thread_lets_go_last(tmp_path):
    r = run_host("""
        import threading
        import numpy as np
        import host

        held = [np.from_dlpack(host.field())]
        host.drop_field()
        t = threading.Thread(target=held.clear)
        t.start()
        t.join()
        assert host.releases() == 1
        """, tmp_path)
    assert releases(r) == 1


def test_the_host_reclaims_its_field_only_after_python_dropped_every_view(tmp_path):
    r = run_host("""
        import numpy as np
        import host

        a = host.field()
        view = np.from_dlpack(a.reshape(4, 4))
        del a
        status, msg = host.reclaim()
        assert status == "in_use", (status, msg)
        assert f"float32 array (16,) at {host.field_ptr():#x} on cpu:0" in msg, msg
        assert "1 other reference" in msg and "TACK_DEBUG" not in msg, msg
        view[0, 0] = 5.0  # still the host's field, alive
        assert host.releases() == 0
        del view
        assert host.reclaim() is None
        assert host.releases() == 1  # at the reclaim, on the host's thread
        """, tmp_path, TACK_DEBUG="0")
    assert releases(r) == 1


def test_views_of_a_field_reclaimed_in_debug_mode_refuse_access(tmp_path):
    r = run_host("""
        import pytest
        import host
        import tack

        @tack.kernel
        def hottest(t):
            m = t[0]
            for i in range(t.shape[0]):
                m = max(m, t[i])
            return m

        a = host.field()
        assert hottest(a) == 0.0
        status, msg = host.reclaim()
        assert status == "in_use" and "TACK_DEBUG" in msg, (status, msg)
        name = f"float32 array (16,) at {host.field_ptr():#x}"
        for access in (lambda: a[0], lambda: a.numpy(), lambda: a.fill(1.0),
                       lambda: a.reshape(4, 4), lambda: a.__dlpack__(),
                       lambda: hottest(a), lambda: tack.copyto(a, tack.zeros(16))):
            with pytest.raises(ValueError, match="reclaimed by its owner") as e:
                access()
            assert name in str(e.value), e.value
        assert "parameter 't'" in str(pytest.raises(tack.TackValueError, hottest, a).value)
        del a
        assert host.reclaim() is None and host.releases() == 1
        """, tmp_path, TACK_DEBUG="1")
    assert releases(r) == 1


def test_finalization_with_live_views_leaks_rather_than_crashes(tmp_path):
    # Python still holds a view of the field when it finalizes, and the host holds
    # arrays over memory Python owns (a NumPy array, a bytearray) that it releases only
    # after finalization: those are leaked, since their owners' deleters need Python.
    r = run_host("""
        import numpy as np
        import host
        import tack

        keep = np.from_dlpack(host.field())
        host.hold(np.arange(8.0))
        host.hold(tack.array_from_ptr(bytearray(64), (16,), "float32"))
        host.hold(tack.from_dlpack(np.ones(4)))
        """, tmp_path)
    assert releases(r) == 1


def test_to_array_takes_any_dlpack_producer(tmp_path):
    run_host("""
        import numpy as np
        import host
        import tack

        x = np.arange(6.0)
        ptr, same_device = host.hold(x)
        assert ptr == x.ctypes.data and same_device
        t = tack.zeros(3)
        assert host.hold(t)[0] == t.ptr
        """, tmp_path)


def test_errors_set_the_exception_and_tack_last_error(tmp_path):
    run_host("""
        import host

        kind, msg = host.to_array_error([1.0, 2.0])
        assert kind == "TypeError" and "list has no __dlpack__" in msg, (kind, msg)
        kind, msg = host.to_array_error(None)
        assert kind == "TypeError" and "NoneType" in msg, (kind, msg)
        # The CPU has no streams: a stream is refused, not ignored.
        kind, msg = host.from_array_error(7)
        assert "stream" in msg, (kind, msg)
        import tack
        assert issubclass(getattr(tack, kind, ValueError), ValueError), kind
        """, tmp_path)


def test_a_cuda_pointer_of_the_host_reaches_python_ordered_after_its_stream(tmp_path):
    r = run_host(_PRELUDE + textwrap.dedent(FOREIGN_STREAM) + """
import host

calls()
s = foreign_stream()
a = host.field(s)
cs = calls()
ns = names(cs)
# Tack's stream waits for the host's stream by an event: the host does not block.
assert "cuStreamSynchronize" not in ns, ns
rec = [c for c in cs if c[0] == "cuEventRecord"]
wait = [c for c in cs if c[0] == "cuStreamWaitEvent"]
assert len(rec) == 1 and f"stream={s:#x}" in rec[0][1], cs
assert len(wait) == 1 and f"stream={tack_stream():#x}" in wait[0][1], cs
assert a.device.backend == "cuda" and a.ptr == host.field_ptr()
assert a.__dlpack_device__() == (2, 0)
a.fill(2.5)
assert (a.numpy() == 2.5).all()
# A consumer on another stream is ordered after Tack's, so after the host's.
b = tack.from_dlpack(a)
assert b.ptr == a.ptr
kind, msg = host.from_array_error(0)
assert "stream" in msg, msg
del a, b
""", tmp_path, device="cuda", TACK_CUDA_DRIVER=str(standin_library()),
        TACK_STANDIN_LOG=str(tmp_path / "driver.log"))
    assert releases(r) == 1


# On a GPU (scripts/gpu_check.sh runs the tests marked cuda): the host's cuMemAlloc'd
# field reaches Python, and from there the peers, without a copy.
_GPU_FIELD = """
    import numpy as np
    import host
    import tack

    a = host.field(2)  # the host's work was queued on the per-thread default stream
    assert a.device.backend == "cuda" and a.ptr == host.field_ptr()
    a.fill(1.5)
    assert (a.numpy() == 1.5).all()
    """


@pytest.mark.cuda
def test_a_cuda_pointer_of_the_host_reaches_python_on_a_gpu(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TACK_CUDA_DRIVER"}
    r = run_host(_GPU_FIELD, tmp_path, device="cuda", env_base=env)
    assert releases(r) == 1


@pytest.mark.cuda
@pytest.mark.torch
def test_a_cuda_pointer_of_the_host_reaches_torch_without_a_copy(tmp_path):
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k != "TACK_CUDA_DRIVER"}
    r = run_host(_GPU_FIELD + """
    import torch
    t = torch.from_dlpack(a)
    assert t.data_ptr() == host.field_ptr() and t.is_cuda
    t += 1
    torch.cuda.synchronize()  # Tack's copy below is not ordered after torch's stream
    assert (a.numpy() == 2.5).all()
    """, tmp_path, device="cuda", env_base=env)
    assert releases(r) == 1


def _patched_copy(tmp_path: Path, *, version: bytes | None = None) -> Path:
    """A second libtack: the package's file with another soname (libtacq.so), so the
    dynamic linker treats it as another library, as it does a prefix install."""
    data = (Path(tack.get_library_dir()) / "libtack.so").read_bytes()
    assert data.count(b"\0libtack.so\0") == 1
    data = data.replace(b"\0libtack.so\0", b"\0libtacq.so\0")
    if version is not None:
        old = b"\0" + tack.__version__.encode() + b"\0"
        assert data.count(old) >= 1 and len(version) == len(old) - 2
        data = data.replace(old, b"\0" + version + b"\0")
    out = tmp_path / "other" / "libtacq.so"
    out.parent.mkdir()
    out.write_bytes(data)
    return out


def _import_after_loading(copy: Path, mode: int) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""
        import ctypes
        ctypes.CDLL({str(copy)!r}, mode={mode})
        import tack
        print(tack._tack._runtime_library())
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)


def test_a_second_copy_with_local_symbols_fails_the_import(tmp_path):
    copy = _patched_copy(tmp_path)
    r = _import_after_loading(copy, ctypes.RTLD_LOCAL)
    assert r.returncode != 0
    assert "ImportError: two copies of libtack are loaded" in r.stderr, r.stderr
    assert str(copy) in r.stderr
    assert str(Path(tack._tack._runtime_library())) in r.stderr
    assert "python -m tack --cflags --libs" in r.stderr


def test_a_copy_with_global_symbols_is_the_one_runtime(tmp_path):
    copy = _patched_copy(tmp_path)
    r = _import_after_loading(copy, ctypes.RTLD_GLOBAL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(copy.resolve())


def test_a_copy_of_another_version_fails_the_import(tmp_path):
    copy = _patched_copy(tmp_path, version=b"9.9.9")
    r = _import_after_loading(copy, ctypes.RTLD_GLOBAL)
    assert r.returncode != 0
    assert "libtack 9.9.9 already loaded from " + str(copy.resolve()) in r.stderr, r.stderr
    assert "python -m tack --cflags --libs" in r.stderr


def test_a_host_linking_another_copy_shares_it_with_python(tmp_path):
    # The host links its own libtack (as one linked to a prefix install does); the
    # extension binds to that copy, and both sides see one runtime.
    copy = _patched_copy(tmp_path)
    host = build_host([f"-L{copy.parent}", "-ltacq", f"-Wl,-rpath,{copy.parent}"])
    r = run_host("""
        import host
        import tack
        assert host.runtime_library() == tack._tack._runtime_library()
        assert host.runtime_library().endswith("libtacq.so")
        a = host.field()
        assert a.device == tack.device("cpu") and host.hold(a)[1]
        n = host.allocations()
        tack.zeros(10)
        assert host.allocations() > n
        """, tmp_path, host=host)
    assert releases(r) == 1


@pytest.mark.parametrize("flag", ["--cflags", "--libs", "--includedir", "--libdir"])
def test_each_flag_prints_one_line(flag):
    r = subprocess.run([sys.executable, "-m", "tack", flag], capture_output=True,
                       text=True, check=True)
    assert len(r.stdout.splitlines()) == 1 and r.stdout.strip()
