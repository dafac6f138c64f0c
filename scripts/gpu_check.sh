#!/usr/bin/env bash
# gpu_check.sh: everything Tack checks on a machine with an NVIDIA GPU, in one command
# and under 8 minutes. Run from the repository root:
#
#     OUT=/some/empty/dir scripts/gpu_check.sh
#
# Steps, each with its own time limit, in this order (the later ones matter least):
#   device       a visible CUDA device (nvidia-smi, and cuInit + cuDeviceGetCount
#                through libcuda.so.1); without one the check FAILS at once, it never
#                skips
#   build        the C library, the C tests, the stand-in and the extension, with meson
#                and ninja (no network, no meson-python: the extension is staged on
#                PYTHONPATH, as `make sanitize-py` does)
#   c-tests      the C unit tests (with the cuda_abi.h check against this toolkit)
#   conformance  the stand-in's conformance suite against the REAL driver
#                (tests/standin/cuda/conformance.c): where the stand-in's model of the
#                driver is wrong, this is where it shows
#   pytest-cuda  pytest -m cuda, with TACK_REQUIRE_CUDA=1 so a CUDA test cannot skip;
#                among them tests/python/test_cuda_differential.py, which runs the whole
#                kernel test suite with every launch repeated on the GPU and compared
#                (summary: $OUT/differential.json)
#   examples     examples/validate.py --arch cuda, and examples/vtk_interop.py
#                --require-cuda when VTK is installed (without it: reported, not run)
#   sanitizer    compute-sanitizer memcheck over the conformance suite (without the
#                cases that fault on purpose) and over pytest -m cuda, the differential
#                test on a subset of the kernel suite (TACK_DIFFERENTIAL_SUITE)
#   racecheck    compute-sanitizer racecheck over one parallel float reduction
#                (tests/python/cuda_reduce_once.py)
#   benchmarks   benchmarks/bench_cuda.py (copies, DLPack, kernels beside their peers),
#                its rows in $OUT/bench_cuda.json
#   mpi          optional, last: Tack's CUDA arrays through MPI (the CUDA cases of
#                tests/python/test_mpi_buffers.py and bench_mpi.py --device cuda), when
#                mpi4py and an mpiexec are installed; without them it is reported as
#                not run and does not fail the check
#
# Time on an H200 with 16 cores (estimates; each step's limit is about twice its
# estimate, all cut to BUDGET): device 5 s, build 90, c-tests 15, conformance 5,
# pytest-cuda 100, examples 15, sanitizer 100, racecheck 20, benchmarks 40, mpi 30:
# about 420 s of a 470 s budget.
#
# Writes $OUT/gpu_check.log (everything), $OUT/<step>.log, and $OUT/gpu_check.json (one
# record per step: status pass, fail, timeout, not-run (the budget was spent) or absent
# (an optional tool is not installed), exit code, seconds). OUT defaults to
# build/gpu-check. Exits 0 only when every step that ran passed and none was cut.

# The step functions below run in a child shell under `timeout` (step exports them),
# which shellcheck cannot follow.
# shellcheck disable=SC2317
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
OUT=${OUT:-$root/build/gpu-check}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
BUILD=${GPU_CHECK_BUILD:-$root/build/gpu}
conformance="$BUILD/tests/standin/tack_cuda_conformance"
export PYTHON BUILD conformance
# The toolkit's tools (nvcc, compute-sanitizer) where they are not on PATH already.
for dir in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer; do
    [[ -d $dir ]] && PATH="$PATH:$dir"
done
export PATH
BUDGET=${GPU_CHECK_BUDGET:-470} # seconds for all steps: under 8 minutes with the start
log="$OUT/gpu_check.log"
records="$OUT/.steps.tsv"
: >"$log"
: >"$records"
start=$(date +%s)
failed=0

say() {
    printf '%s\n' "$*" | tee -a "$log"
}

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND (a program or a function of this
# script) with a time limit, cut to what is left of the budget; logs it and records the
# result. Returns the command's status.
step() {
    local name=$1 limit=$2
    shift 2
    local now left t0 rc status
    now=$(date +%s)
    left=$((BUDGET - (now - start)))
    if ((left < 10)); then
        say "== $name: not run (the time budget is spent)"
        printf '%s\tnot-run\t-1\t0\n' "$name" >>"$records"
        failed=1
        return 1
    fi
    ((limit > left)) && limit=$left
    say "== $name (limit ${limit}s): $*"
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    tee -a "$log" <"$OUT/$name.log"
    case $rc in
    0) status=pass ;;
    124 | 137) status=timeout ;;
    *) status=fail ;;
    esac
    ((rc != 0)) && failed=1
    printf '%s\t%s\t%d\t%d\n' "$name" "$status" "$rc" "$(($(date +%s) - t0))" >>"$records"
    say "== $name: $status (exit $rc)"
    return "$rc"
}

# absent NAME WHY: an optional step whose tools are not installed; recorded, not failed.
absent() {
    say "== $1: optional, not run ($2)"
    printf '%s\tabsent\t-1\t0\n' "$1" >>"$records"
}

finish() {
    "$PYTHON" - "$records" "$OUT/gpu_check.json" "$(($(date +%s) - start))" <<'EOF'
import json, sys
steps = []
for line in open(sys.argv[1]):
    name, status, rc, seconds = line.rstrip("\n").split("\t")
    steps.append({"name": name, "status": status, "rc": int(rc), "seconds": int(seconds)})
ok = any(s["status"] == "pass" for s in steps) and all(
    s["status"] in ("pass", "absent") for s in steps)
with open(sys.argv[2], "w") as f:
    json.dump({"ok": ok, "seconds": int(sys.argv[3]), "steps": steps}, f, indent=2)
EOF
    rm -f "$records"
    if ((failed)); then
        say "GPU check FAILED (details in $OUT/gpu_check.log and $OUT/gpu_check.json)"
        exit 1
    fi
    say "GPU check passed"
    exit 0
}

# ---- device: fail, never skip, without one ---------------------------------------
check_device() {
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "no CUDA device: nvidia-smi is not installed on this machine"
        return 1
    fi
    if ! nvidia-smi -L | grep -q '^GPU '; then
        echo "no CUDA device: nvidia-smi lists no GPU"
        return 1
    fi
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PYTHON" - <<'EOF'
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    sys.exit(f"no CUDA device: libcuda.so.1 does not load ({e})")
rc = cuda.cuInit(0)
count, version = ctypes.c_int(0), ctypes.c_int(0)
if rc == 0:
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
cuda.cuDriverGetVersion(ctypes.byref(version))
if rc != 0 or count.value == 0:
    sys.exit(f"no CUDA device: cuInit/cuDeviceGetCount returned {rc}, {count.value} devices")
print(f"libcuda.so.1: driver API {version.value}, {count.value} device(s)")
EOF
}

export -f check_device
if ! step device 30 check_device; then
    say "no CUDA device visible: the GPU check fails (it never skips)"
    finish
fi
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2 | tee -a "$log"

# ---- build --------------------------------------------------------------------------
build() {
    meson setup --wipe "$BUILD" -Dpython=true -Dtests=true -Dbuildtype=release \
        -Dwerror=false >/dev/null 2>&1 ||
        meson setup "$BUILD" -Dpython=true -Dtests=true -Dbuildtype=release \
            -Dwerror=false || return 1
    ninja -C "$BUILD" || return 1
    rm -rf "$BUILD/stage" && mkdir -p "$BUILD/stage" &&
        cp -r src/tack "$BUILD/stage/" && cp "$BUILD"/_tack*.so "$BUILD/stage/tack/" &&
        PYTHONPATH="$BUILD/stage" "$PYTHON" -c "import tack; print('tack', tack.__file__)"
}
export -f build
if ! step build 200 build; then
    finish
fi

step c-tests 60 "$BUILD/tests/c/tack_c_tests"
step conformance 90 env -u TACK_CUDA_DRIVER "$conformance" libcuda.so.1

export PYTHONPATH="$BUILD/stage"
export TACK_REQUIRE_CUDA=1
unset TACK_CUDA_DRIVER
# pytest -m cuda; collecting no test at all is a failure too (exit 5), said plainly.
pytest_cuda() {
    "$@" -m pytest -q -p no:cacheprovider -m cuda --ignore=tests/python/test_mpi_buffers.py \
        tests/python
    local rc=$?
    ((rc == 5)) && echo "pytest collected no test marked cuda: nothing was checked"
    return "$rc"
}
export -f pytest_cuda
TACK_DIFFERENTIAL_REPORT="$OUT/differential.json" step pytest-cuda 200 pytest_cuda "$PYTHON"

# validate.py exits 2 without a device, 1 when a check fails; vtk_interop.py needs VTK.
examples_validate() {
    "$PYTHON" examples/validate.py --arch cuda
}
examples_vtk() {
    "$PYTHON" examples/vtk_interop.py --require-cuda --output "$OUT/radius.vti"
}
export -f examples_validate examples_vtk
step examples 40 examples_validate
if "$PYTHON" -c "import vtkmodules.vtkCommonCore" >/dev/null 2>&1; then
    step vtk-example 40 examples_vtk
else
    absent vtk-example "VTK is not installed here, so examples/vtk_interop.py cannot run"
fi

# The kernel suite under memcheck: a subset, every launch still compared.
MEMCHECK_SUITE="test_kernels_language.py test_kernels_semantics.py test_kernels_atomics.py"
export MEMCHECK_SUITE
sanitize() {
    local rc=0
    if ! command -v compute-sanitizer >/dev/null 2>&1; then
        echo "compute-sanitizer is not installed (looked on PATH and in /usr/local/cuda)"
        return 1
    fi
    # The cases that move data and launch kernels (each case is a process, and the
    # sanitizer's start-up per process is slow).
    compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 \
        "$conformance" --no-device-faults libcuda.so.1 \
        sync_copies_round_trip,events_order_streams,vmm_export_and_import_fd,launch_runs_the_kernel,launch_from_cubin ||
        rc=1
    TACK_DIFFERENTIAL_SUITE="$MEMCHECK_SUITE" \
        compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 \
        "$PYTHON" -m pytest -q -x -p no:cacheprovider -m cuda \
        --ignore=tests/python/test_mpi_buffers.py tests/python || rc=1
    return "$rc"
}
export -f sanitize
step sanitizer 200 sanitize

racecheck() {
    if ! command -v compute-sanitizer >/dev/null 2>&1; then
        echo "compute-sanitizer is not installed (looked on PATH and in /usr/local/cuda)"
        return 1
    fi
    compute-sanitizer --tool racecheck --error-exitcode 99 \
        "$PYTHON" tests/python/cuda_reduce_once.py
}
export -f racecheck
step racecheck 60 racecheck

step benchmarks 120 "$PYTHON" benchmarks/bench_cuda.py --json "$OUT/bench_cuda.json"

# ---- mpi (optional): needs mpi4py and mpiexec, which a GPU image may lack -------------
mpi_cuda() {
    "$PYTHON" -m pytest -q -p no:cacheprovider -m cuda tests/python/test_mpi_buffers.py ||
        return 1
    mpiexec -n 2 "$PYTHON" benchmarks/bench_mpi.py --device cuda --quick
}
export -f mpi_cuda
if "$PYTHON" -c "import mpi4py" >/dev/null 2>&1 && command -v mpiexec >/dev/null 2>&1; then
    step mpi 90 mpi_cuda
else
    absent mpi "mpi4py or mpiexec is not installed here"
fi

finish
