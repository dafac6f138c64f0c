"""The driver's build log of a kernel's module: zeModuleCreate gets a phBuildLog, a
module the driver cannot build is a CompileError carrying the log's text (its first
4 KiB), and the log is destroyed on success too. Through the real loader on the
strict stand-in (level_zero_helpers), whose own build logs are checked here as well.
"""

import opencl_cpu_runtime
import pytest
from level_zero_helpers import modes, run, standin_only

from tack.kernel import spirv

# Each test reads the stand-in's build-log counters, its complaints or its settings.
pytestmark = standin_only

KERNEL = """
import importlib
_spirv = importlib.import_module("tack.kernel.spirv")  # tack.kernel is the decorator

@tack.kernel(source='''
def double_it(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0
''')
def double_it(x):
    pass

@tack.kernel(source='''
def halve_it(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 0.5
''')
def halve_it(x):
    pass

def build_logs():
    lib = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"].split(",")[0])
    made, destroyed = ctypes.c_uint64(), ctypes.c_uint64()
    lib.tack_standin_ze_build_logs(ctypes.byref(made), ctypes.byref(destroyed))
    return made.value, destroyed.value

def failure(image=None, kernel=double_it):
    # kernel's module as the driver gets it (image(module) when given) at its first
    # build, which the kernel keeps
    if image is not None:
        made = _spirv.compile_opencl_cached
        _spirv.compile_opencl_cached = lambda source: image(made(source))
    try:
        kernel(tack.zeros(4, device=tack.device("level_zero")))
    except tack.CompileError as exc:
        return str(exc)
    finally:
        if image is not None:
            _spirv.compile_opencl_cached = made
    raise AssertionError("the module was built")
"""


# The loader intercepts (wraps every handle) in these modes, and returns a failed
# zeModuleCreate's build log unwrapped: no call can take it, so Tack leaves it (the
# stand-in then says at exit that it was never destroyed) and says why it is missing.
INTERCEPTED = ("intercept", "validation+intercept", "two-drivers")


@pytest.mark.parametrize("mode", modes())
def test_an_unbuildable_module_is_a_compile_error_with_the_drivers_log(mode, tmp_path):
    readable = mode not in INTERCEPTED
    out = run(KERNEL + f"""
# a last instruction of 5 words that ends after the module's first
msg = failure(lambda module: module + (5 << 16 | 1).to_bytes(4, "little"))
print("malformed:", msg)
assert "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE" in msg, msg
msg2 = failure(lambda module: bytes(20), halve_it)
assert "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY" in msg2, msg2
if {readable}:
    assert "build log: the SPIR-V module's instructions are malformed" in msg, msg
    assert "build log: 20 bytes that are not a SPIR-V module" in msg2, msg2
    assert build_logs() == (2, 2), build_logs()
else:
    for m in (msg, msg2):
        assert "build log: (not readable: the Level Zero loader's intercept" in m, m
    assert build_logs() == (2, 0), build_logs()
""", mode, expect=("instructions are malformed", "not a SPIR-V module")
              + (() if readable else ("was never destroyed",)),
              TACK_CACHE_DIR=str(tmp_path))
    assert "double_it" in out.stdout, out.stdout
    assert ("was never destroyed" in out.stderr) != readable, out.stderr


@pytest.mark.skipif(opencl_cpu_runtime.library_dir() is None,
                    reason="Intel's OpenCL CPU runtime is not installed (make setup): "
                    "no OpenCL build log to read")
# the log is read only where the loader does not intercept (the other modes are
# test_an_unbuildable_module_is_a_compile_error_with_the_drivers_log's)
@pytest.mark.parametrize("mode", modes("plain", "validation"))
def test_opencls_build_log_reaches_the_compile_error(mode, tmp_path):
    run(KERNEL + """
def as_shader(module):  # OpCapability Kernel (6) becomes Shader (1), which OpenCL refuses
    words = [int.from_bytes(module[k:k + 4], "little") for k in range(0, len(module), 4)]
    k = 5
    while k < len(words):
        if words[k] & 0xFFFF == 17 and words[k + 1] == 6:
            words[k + 1] = 1
        k += words[k] >> 16
    return b"".join(w.to_bytes(4, "little") for w in words)

msg = failure(as_shader)
assert "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE" in msg, msg
assert "SPIRV module requires unsupported capability 1" in msg, msg
assert build_logs() == (1, 1)
""", mode, expect=("OpenCL cannot build",), TACK_STANDIN_ZE_EXECUTE="spirv",
        TACK_CACHE_DIR=str(tmp_path))


# the log is read only where the loader does not intercept (the other modes are
# test_an_unbuildable_module_is_a_compile_error_with_the_drivers_log's)
@pytest.mark.parametrize("mode", modes("plain", "validation"))
def test_a_long_build_log_is_cut_at_4_kib(mode, tmp_path):
    text = "".join(f"error {i:04d}: something the driver said\n" for i in range(200))
    assert len(text) > 7000
    run(KERNEL + f"""
text = {text!r}
msg = failure()
assert "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE" in msg, msg
assert ("build log: " + text[:4096] + "\\n... ({len(text) - 4096} more bytes)") in msg, msg
assert text[4096:4200] not in msg
assert build_logs() == (1, 1)
""", mode, TACK_STANDIN_ZE_FAIL_BUILD=text, TACK_CACHE_DIR=str(tmp_path))


@pytest.mark.parametrize("mode", modes())
def test_the_build_log_is_destroyed_when_the_module_builds(mode, tmp_path):
    run(KERNEL + """
x = tack.array(np.arange(4.0), device=tack.device("level_zero"))
double_it(x)
assert (x.numpy() == [0.0, 2.0, 4.0, 6.0]).all()
made, destroyed = build_logs()
assert made == destroyed == 1, (made, destroyed)
""", mode, TACK_CACHE_DIR=str(tmp_path))


# The stand-in's logs through the loader, as any application would use them.
LOGS = """
import struct
V = ctypes.c_void_p
_ze.zeModuleBuildLogGetString.argtypes = [V, ctypes.POINTER(ctypes.c_size_t), V]
h = foreign_context()
spirv = bytes.fromhex(os.environ["SPIRV"])
buf = ctypes.create_string_buffer(spirv, len(spirv))
md = struct.pack("=IxxxxQIxxxxQQQQ", 0x1b, 0, 0, len(spirv), ctypes.addressof(buf), 0, 0)

def module():
    m, log = V(), V()
    rc = _ze.zeModuleCreate(V(h["context"]), V(h["device"]), md, ctypes.byref(m),
                            ctypes.byref(log))
    return rc, m, log

def text(log, size=None):
    n = ctypes.c_size_t(0)
    assert _ze.zeModuleBuildLogGetString(log, ctypes.byref(n), None) == 0
    out = ctypes.create_string_buffer(n.value)
    n.value = n.value if size is None else size
    rc = _ze.zeModuleBuildLogGetString(log, ctypes.byref(n), out)
    return rc, out.value.decode()
"""


def spirv_env() -> dict[str, str]:
    return {"SPIRV": spirv.compile_opencl("__kernel void tack_kernel_body(void) {}").hex()}


def test_the_standins_build_logs_are_checked():
    out = run(LOGS + """
rc, m, log = module()
assert rc == 0 and log.value
assert text(log) == (0, "")  # built: an empty log
assert _ze.zeModuleBuildLogDestroy(log) == 0
print("again", hex(_ze.zeModuleBuildLogDestroy(log)))
assert _ze.zeModuleDestroy(m) == 0
""", expect=("was destroyed",), **spirv_env())
    assert "again 0x78000004" in out.stdout, out.stdout
    assert "zeModuleBuildLogDestroy: the module build log" in out.stderr, out.stderr


def test_a_short_buffer_and_a_log_never_destroyed_are_complaints():
    out = run(LOGS + """
rc, m, log = module()
assert rc == 0x70000004 and not m.value, hex(rc)  # ZE_RESULT_ERROR_MODULE_BUILD_FAILURE
assert text(log) == (0, "it would not build")
print("short", hex(text(log, size=5)[0]))
""", expect=("a buffer of 5 bytes", "never destroyed"), **spirv_env(),
              TACK_STANDIN_ZE_FAIL_BUILD="it would not build")
    assert "short 0x78000008" in out.stdout, out.stdout  # ZE_RESULT_ERROR_INVALID_SIZE
    assert ("zeModuleCreate: its build log 0x" in out.stderr
            and "was never destroyed (zeModuleBuildLogDestroy)" in out.stderr), out.stderr
