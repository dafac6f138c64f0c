"""The strict stand-in's launches execute the module's SPIR-V on Intel's OpenCL CPU
runtime (tests/standin/level_zero/standin_ze_opencl.c), driven through the real
loader with ctypes as a Level Zero application would: zeModuleCreate,
zeKernelCreate, zeKernelSetArgumentValue, zeKernelSetGroupSize, a launch on a command
list, execute and synchronize. Without the runtime, or with
TACK_STANDIN_ZE_EXECUTE=twin, launches fall back to CPU twins (and one without a twin
is refused)."""

import signal
import subprocess
import textwrap

import opencl_cpu_runtime
import pytest
from level_zero_helpers import modes, run, standin_only

from tack.kernel.spirv import compile_opencl

needs_runtime = pytest.mark.skipif(
    opencl_cpu_runtime.library_dir() is None,
    reason="Intel's OpenCL CPU runtime is not installed (make setup): SPIR-V not run")

# Tack's argument shape: the parameter block by value, its arrays 64-bit device
# addresses; the launch record, a __global pointer that may be NULL; a reduction's
# block memory, __local, last.
SOURCE = """
typedef struct { ulong x; ulong y; ulong partial; long n; } params;
typedef struct { int failed; int code; } record;
__kernel void tack_kernel_body(params p, __global record *r, __local double *shm) {
    size_t i = get_global_id(0), l = get_local_id(0), g = get_local_size(0);
    __global const double *x = (__global const double *)p.x;
    __global double *y = (__global double *)p.y;
    shm[l] = i < p.n ? x[i] : 0.0;
    if (i < p.n) y[i] = 2.0 * x[i];
    for (size_t s = g / 2; s > 0; s /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) shm[l] += shm[l + s];
    }
    if (l == 0) ((__global double *)p.partial)[get_group_id(0)] = shm[0];
    if (i == 0 && r) r->code = 7;
}
"""

CHILD = """
import struct
_ze.zeCommandListAppendLaunchKernel.argtypes = [ctypes.c_void_p] * 6
_ze.zeCommandListAppendMemoryCopy.argtypes = [ctypes.c_void_p] * 3 + [
    ctypes.c_size_t] + [ctypes.c_void_p] * 3
_ze.zeKernelSetArgumentValue.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                         ctypes.c_size_t, ctypes.c_void_p]
_ze.zeMemAllocDevice.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
V = ctypes.c_void_p

def executed():
    lib = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"].split(",")[0])
    s, t = ctypes.c_uint64(), ctypes.c_uint64()
    lib.tack_standin_ze_executed(ctypes.byref(s), ctypes.byref(t))
    return s.value, t.value

class Session:
    def __init__(self, h):
        self.ctx, self.dev = V(h["context"]), V(h["device"])
        qd = struct.pack("=IxxxxQIIIII4x", 0xe, 0, 1, 0, 0, 2, 0)
        self.q, self.l = V(), V()
        assert _ze.zeCommandQueueCreate(self.ctx, self.dev, qd, ctypes.byref(self.q)) == 0
        ld = struct.pack("=IxxxxQII", 0xf, 0, 1, 0)
        assert _ze.zeCommandListCreate(self.ctx, self.dev, ld, ctypes.byref(self.l)) == 0

    def alloc(self, nbytes):
        p = V()
        ad = struct.pack("=IxxxxQII", 0x15, 0, 0, 0)
        assert _ze.zeMemAllocDevice(self.ctx, ad, nbytes, 64, self.dev,
                                    ctypes.byref(p)) == 0
        return p.value

    def kernel(self, spirv, name=b"tack_kernel_body"):
        buf = ctypes.create_string_buffer(spirv, len(spirv))
        md = struct.pack("=IxxxxQIxxxxQQQQ", 0x1b, 0, 0, len(spirv),
                         ctypes.addressof(buf), 0, 0)
        self.m, k = V(), V()
        rc = _ze.zeModuleCreate(self.ctx, self.dev, md, ctypes.byref(self.m), None)
        if rc:
            return rc
        cname = ctypes.create_string_buffer(name)
        kd = struct.pack("=IxxxxQIxxxxQ", 0x1d, 0, 0, ctypes.addressof(cname))
        assert _ze.zeKernelCreate(self.m, kd, ctypes.byref(k)) == 0
        return k

    def run(self, commands):
        for c in commands:
            assert c() == 0
        assert _ze.zeCommandListClose(self.l) == 0
        assert _ze.zeCommandQueueExecuteCommandLists(self.q, 1, ctypes.byref(self.l),
                                                     None) == 0
        rc = _ze.zeCommandQueueSynchronize(self.q, ctypes.c_uint64(2**64 - 1))
        assert _ze.zeCommandListReset(self.l) == 0
        return rc

    def copy(self, dst, src, nbytes):
        return lambda: _ze.zeCommandListAppendMemoryCopy(self.l, dst, src, nbytes,
                                                         None, 0, None)

    def barrier(self):
        return lambda: _ze.zeCommandListAppendBarrier(self.l, None, 0, None)

    def launch(self, k, groups):
        gc = (ctypes.c_uint32 * 3)(groups, 1, 1)
        return lambda: _ze.zeCommandListAppendLaunchKernel(self.l, k, gc, None, 0, None)

def set_args(k, x, y, partial, n, record, group):
    blk = struct.pack("=QQQq", x, y, partial, n)
    assert _ze.zeKernelSetArgumentValue(k, 0, len(blk), blk) == 0
    rec = ctypes.c_uint64(record or 0)
    assert _ze.zeKernelSetArgumentValue(k, 1, 8, None if record is None
                                        else ctypes.byref(rec)) == 0
    assert _ze.zeKernelSetArgumentValue(k, 2, 8 * group, None) == 0
    assert _ze.zeKernelSetGroupSize(k, group, 1, 1) == 0

spirv = bytes.fromhex(os.environ["SPIRV"])
"""


def faulted(out: subprocess.CompletedProcess[str]) -> bool:
    """Whether the child died of a memory fault: SIGSEGV, or under ASan (make
    sanitize-py) its report of one and abort."""
    return out.returncode == -signal.SIGSEGV or (
        out.returncode == -signal.SIGABRT and "AddressSanitizer: SEGV" in out.stderr)


def child(code: str) -> str:
    return CHILD + "\n" + textwrap.dedent(code)


def spirv_env() -> dict[str, str]:
    return {"SPIRV": compile_opencl(SOURCE).hex()}


@needs_runtime
@pytest.mark.parametrize("mode", modes())
def test_a_launch_executes_its_spirv_on_opencl(mode):
    out = run(child("""
        s = Session(foreign_context())
        k = s.kernel(spirv)
        n, group = 100, 16
        groups = (n + group - 1) // group
        x = np.arange(n, dtype=np.float64)
        dx, dy = s.alloc(8 * n), s.alloc(8 * n)
        dp, dr = s.alloc(8 * groups), s.alloc(8)
        y, part = np.zeros(n), np.zeros(groups)
        rec = np.zeros(2, dtype=np.int32)
        for record in (dr, None):  # the record pointer may be NULL
            rec[:] = 0
            set_args(k, dx, dy, dp, n, record, group)
            assert s.run([s.copy(dr, rec.ctypes.data, 8), s.copy(dx, x.ctypes.data, 8 * n),
                          s.barrier(), s.launch(k, groups), s.barrier(),
                          s.copy(y.ctypes.data, dy, 8 * n),
                          s.copy(part.ctypes.data, dp, 8 * groups),
                          s.copy(rec.ctypes.data, dr, 8)]) == 0
            assert (y == 2 * x).all()
            want = [x[g * group:(g + 1) * group].sum() for g in range(groups)]
            assert (part == want).all(), part
            assert rec[1] == (7 if record else 0), rec
        print("executed", *executed())
    """), mode, **spirv_env())
    assert "executed 2 0" in out.stdout
    assert "standin-ze: note: launches run the module's SPIR-V on OpenCL" in out.stderr


@needs_runtime
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_a_kernel_writing_another_contexts_memory_faults(mode):
    # Only the list's context's device memory is opened to a launch: another
    # context's allocation stays PROT_NONE, so the kernel's write is a fault.
    out = run(child("""
        s = Session(foreign_context())
        other = Session(foreign_context())
        k = s.kernel(spirv)
        dx, dp = s.alloc(8 * 16), s.alloc(8)
        theirs = other.alloc(8 * 16)
        set_args(k, dx, theirs, dp, 16, None, 16)
        print("launching", flush=True)
        s.run([s.launch(k, 1)])
        print("not caught", flush=True)
    """), mode, check=False, **spirv_env())
    assert "launching" in out.stdout and "not caught" not in out.stdout
    assert faulted(out), (out.returncode, out.stderr)


@needs_runtime
@standin_only
@pytest.mark.parametrize("mode", modes())
def test_a_kernel_writing_past_an_allocation_faults(mode):
    # Each allocation's view is followed by a page that stays PROT_NONE during a
    # launch: a kernel that runs off the end of its last page faults there.
    out = run(child("""
        s = Session(foreign_context())
        k = s.kernel(spirv)
        dx, dp = s.alloc(8 * 1024), s.alloc(8 * 64)
        short = s.alloc(4096)  # 512 doubles, and the kernel writes 1024
        set_args(k, dx, short, dp, 1024, None, 16)
        print("launching", flush=True)
        s.run([s.launch(k, 64)])
        print("not caught", flush=True)
    """), mode, check=False, **spirv_env())
    assert "launching" in out.stdout and "not caught" not in out.stdout
    assert faulted(out), (out.returncode, out.stderr)


NO_TWIN = """
    s = Session(foreign_context())
    k = s.kernel(spirv)
    d = s.alloc(64)
    set_args(k, d, d, d, 0, None, 4)
    rc = _ze.zeCommandListAppendLaunchKernel(s.l, k, (ctypes.c_uint32 * 3)(1, 1, 1),
                                             None, 0, None)
    print("append", hex(rc), *executed())
"""


@standin_only
@pytest.mark.parametrize("mode", modes())
def test_twin_mode_and_a_missing_runtime_fall_back_to_twins(mode):
    for env in ({"TACK_STANDIN_ZE_EXECUTE": "twin"}, {"OCL_ICD_FILENAMES": "/nonexistent"},
                {"TACK_STANDIN_ZE_OPENCL": "/nonexistent/libOpenCL.so.1"}):
        out = run(child(NO_TWIN), mode, expect=("no CPU twin is registered",),
                  **spirv_env(), **env)
        assert "append 0x78000003 0 0" in out.stdout, out.stdout
        assert "no CPU twin is registered for kernel 'tack_kernel_body'" in out.stderr
        assert "standin-ze: note: launches run CPU twins: " in out.stderr


@standin_only
@pytest.mark.parametrize("mode", modes())
def test_spirv_mode_without_the_runtime_is_a_complaint(mode):
    out = run(child(NO_TWIN), mode, expect=("TACK_STANDIN_ZE_EXECUTE=spirv",),
              **spirv_env(),
              TACK_STANDIN_ZE_EXECUTE="spirv", OCL_ICD_FILENAMES="/nonexistent")
    assert "append 0x78000003 0 0" in out.stdout, out.stdout
    # no platform behind the ICD loader; or, where the environment has none, no loader
    assert ("cannot run on OpenCL: OpenCL lists no platform" in out.stderr
            or "cannot run on OpenCL: no OpenCL loader" in out.stderr), out.stderr
