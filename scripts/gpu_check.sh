#!/usr/bin/env bash
# gpu_check.sh: everything Tack checks on a machine with an NVIDIA GPU, in one command
# and within a time budget. Run from the repository root:
#
#     OUT=/some/empty/dir scripts/gpu_check.sh
#
# Steps, in this order (the later ones matter least):
#   device       a visible CUDA device (nvidia-smi, and cuInit + cuDeviceGetCount
#                through libcuda.so.1); without one the check FAILS at once, it never
#                skips
#   probe        what the machine has: meson and ninja (needed), Python's headers (without
#                them the build leaves the extension out, the C tests and the conformance
#                suite still run, and the Python steps are not run), nvcc,
#                compute-sanitizer, the peers
#   build        the C library, the C tests, the stand-in and the extension, with meson
#                and ninja (no network, no meson-python: the extension is staged on
#                PYTHONPATH, as `make sanitize-py` does)
#   c-tests      the C unit tests (with the cuda_abi.h check against this toolkit)
#   conformance  the stand-in's conformance suite against the REAL driver
#                (tests/standin/cuda/conformance.c): where the stand-in's model of the
#                driver is wrong, this is where it shows
#   pytest-cuda  Tack's own CUDA tests (pytest -m "$OWN_TESTS": marked cuda, not marked
#                with a peer), with TACK_REQUIRE_CUDA=1 so a CUDA test cannot skip; among
#                them tests/python/test_cuda_differential.py, which runs the kernel test
#                suite with every launch repeated on the GPU and compared (summary:
#                $OUT/differential.json)
#   torch, cupy, jax
#                the CUDA tests with that peer (marked cuda and torch, ...), each where
#                the peer imports (absent otherwise)
#   examples     examples/validate.py --arch cuda, and examples/vtk_interop.py
#                --require-cuda when VTK is installed (absent otherwise)
#   sanitizer    compute-sanitizer memcheck over the conformance suite (without the
#                cases that fault on purpose) and over Tack's own CUDA tests, the
#                differential test on a subset of the kernel suite
#                (TACK_DIFFERENTIAL_SUITE); never over the peers' tests, whose libraries
#                are not Tack's to check
#   racecheck    compute-sanitizer racecheck over one parallel float reduction
#                (tests/python/cuda_reduce_once.py)
#   benchmarks   benchmarks/bench_cuda.py (copies, DLPack, kernels beside their peers),
#                its rows in $OUT/bench_cuda.json
#   mpi          Tack's CUDA arrays through MPI (the CUDA cases of
#                tests/python/test_mpi_buffers.py and bench_mpi.py --device cuda), when
#                mpi4py and an mpiexec are installed (absent otherwise)
# The sanitizer steps are absent where compute-sanitizer is not installed.
#
# Environment:
#   OUT                 where the results go (default build/gpu-check): at most four
#                       files, gpu_check.json, differential.json, bench_cuda.json and
#                       logs.tgz (gpu_check.log with everything, one <step>.log each)
#   PYTHON              the interpreter (default python3)
#   GPU_CHECK_BUILD     the build folder (default build/gpu)
#   GPU_CHECK_REUSE=1   use the build already in GPU_CHECK_BUILD: it is not configured
#                       again (ninja brings it up to date, nothing when it is)
#   GPU_CHECK_BUDGET    seconds for the whole check (default 470). gpu_check.json is
#                       written after every step and complete before the budget ends: a
#                       step that would not fit in what is left is not run ("out of
#                       time"), and the one running is cut at the budget
#   GPU_CHECK_SMOKE=1   a rehearsal (on the stand-in driver): benchmarks at smoke size
#                       and the differential test on a subset of the kernel suite
#
# Time on an H200 with 16 cores (estimates, seconds; each step's limit is about twice
# its estimate, cut to the budget): device 5, probe 5, build 90, c-tests 15,
# conformance 5, pytest-cuda 100, torch 20, cupy 10, jax 15, examples 15, sanitizer 100,
# racecheck 20, benchmarks 40, mpi 30: about 470 with everything installed.
#
# gpu_check.json: {"ok", "complete", "seconds", "budget", "steps": [{"name", "status",
# "rc", "seconds", "reason"}]}, status pass, fail, timeout (cut by its limit), not-run
# (out of time, or what it needs is missing) or absent (an optional tool or peer is not
# installed). Exits 0 only when every step passed or is absent.

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
REUSE=${GPU_CHECK_REUSE:-0}
SMOKE=${GPU_CHECK_SMOKE:-0}
BUDGET=${GPU_CHECK_BUDGET:-470}
conformance="$BUILD/tests/standin/tack_cuda_conformance"
# Tack's own CUDA tests: the ones that use a peer library have a marker of its name.
OWN_TESTS="cuda and not (torch or cupy or jax)"
PEERS="torch cupy jax"
# The kernel suite under memcheck (and in a rehearsal): a subset, every launch compared.
SUBSET_SUITE="test_kernels_language.py test_kernels_semantics.py test_kernels_atomics.py"
export PYTHON BUILD conformance OWN_TESTS SUBSET_SUITE SMOKE
# The toolkit's tools (nvcc, compute-sanitizer) where they are not on PATH already.
for dir in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer; do
    [[ -d $dir ]] && PATH="$PATH:$dir"
done
export PATH
CHECK_NAME=gpu_check
CHECK_TITLE="GPU check"
# shellcheck source=scripts/check_steps.sh
. "$root/scripts/check_steps.sh"

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
if ! step device 5 30 check_device; then
    say "no CUDA device visible: the GPU check fails (it never skips)"
    finish
fi

# ---- probe: what this machine has -----------------------------------------------
probe() {
    local rc=0
    probe_build_tools || rc=1
    if has_python_headers; then
        echo "Python headers: present"
    else
        echo "Python headers: missing (the extension is left out of the build)"
    fi
    probe_optional nvcc compute-sanitizer mpiexec
    # shellcheck disable=SC2086 # PEERS is a list of names
    probe_modules numpy pytest $PEERS vtkmodules mpi4py
    return "$rc"
}
export -f probe
export PEERS
if ! step probe 5 30 probe; then
    finish
fi
with_python=true
if ! has_python_headers; then
    with_python=false
    python_steps=0
    python_why="no Python headers for $PYTHON: the extension was not built"
fi

# ---- build --------------------------------------------------------------------------
WITH_PYTHON=$with_python
export WITH_PYTHON
[[ $REUSE == 1 ]] && build_estimate=10 || build_estimate=90
if ! step build "$build_estimate" 200 build; then
    finish
fi
if [[ $with_python == true && ! -f $BUILD/stage/tack/__init__.py ]]; then
    python_steps=0
    python_why="the build in $BUILD has no extension (configured with -Dpython=false)"
fi

step c-tests 15 60 env -u TACK_CUDA_DRIVER "$BUILD/tests/c/tack_c_tests"
step conformance 5 90 env -u TACK_CUDA_DRIVER "$conformance" libcuda.so.1

export PYTHONPATH="$BUILD/stage"
export TACK_REQUIRE_CUDA=1
unset TACK_CUDA_DRIVER
# pytest over the CUDA tests of a marker expression; collecting none is a failure too
# (exit 5), said plainly.
pytest_marked() {
    "$PYTHON" -m pytest -q -p no:cacheprovider -m "$1" \
        --ignore=tests/python/test_mpi_buffers.py tests/python
    local rc=$?
    ((rc == 5)) && echo "pytest collected no test marked '$1': nothing was checked"
    return "$rc"
}
export -f pytest_marked
if ((SMOKE)); then
    export TACK_DIFFERENTIAL_SUITE="$SUBSET_SUITE"
fi
TACK_DIFFERENTIAL_REPORT="$OUT/differential.json" \
    python_step pytest-cuda 100 200 pytest_marked "$OWN_TESTS"
unset TACK_DIFFERENTIAL_SUITE
for peer in $PEERS; do
    if ((python_steps)) && ! "$PYTHON" -c "import $peer" >/dev/null 2>&1; then
        absent "$peer" "$peer is not installed for $PYTHON"
    else
        python_step "$peer" 15 60 pytest_marked "cuda and $peer"
    fi
done

# validate.py exits 2 without a device, 1 when a check fails; vtk_interop.py needs VTK.
examples_validate() {
    "$PYTHON" examples/validate.py --arch cuda
}
examples_vtk() {
    "$PYTHON" examples/vtk_interop.py --require-cuda --output "$work/radius.vti"
}
export -f examples_validate examples_vtk
python_step examples 15 40 examples_validate
if ((python_steps)) && ! "$PYTHON" -c "import vtkmodules.vtkCommonCore" >/dev/null 2>&1; then
    absent vtk-example "VTK is not installed here, so examples/vtk_interop.py cannot run"
else
    python_step vtk-example 15 40 examples_vtk
fi

# memcheck over Tack's own processes: the conformance cases that move data and launch
# kernels (each case is a process, and the sanitizer's start-up per process is slow),
# and Tack's own CUDA tests with the kernel suite cut to a subset.
sanitize() {
    local rc=0
    compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 \
        "$conformance" --no-device-faults libcuda.so.1 \
        sync_copies_round_trip,events_order_streams,vmm_export_and_import_fd,launch_runs_the_kernel,launch_from_cubin ||
        rc=1
    if [[ $WITH_PYTHON == true ]]; then
        TACK_DIFFERENTIAL_SUITE="$SUBSET_SUITE" \
            compute-sanitizer --tool memcheck --target-processes all --error-exitcode 99 \
            "$PYTHON" -m pytest -q -x -p no:cacheprovider -m "$OWN_TESTS" \
            --ignore=tests/python/test_mpi_buffers.py tests/python || rc=1
    else
        echo "Tack's Python tests left out: no extension was built (pytest-cuda says so)"
    fi
    return "$rc"
}
racecheck() {
    compute-sanitizer --tool racecheck --error-exitcode 99 \
        "$PYTHON" tests/python/cuda_reduce_once.py
}
export -f sanitize racecheck
if command -v compute-sanitizer >/dev/null 2>&1; then
    step sanitizer 100 200 sanitize
    python_step racecheck 20 60 racecheck
else
    absent sanitizer "compute-sanitizer is not installed (looked on PATH and in /usr/local/cuda)"
    absent racecheck "compute-sanitizer is not installed (looked on PATH and in /usr/local/cuda)"
fi

bench_args=(--json "$OUT/bench_cuda.json")
((SMOKE)) && bench_args+=(--smoke)
python_step benchmarks 40 120 "$PYTHON" benchmarks/bench_cuda.py "${bench_args[@]}"

# ---- mpi (optional): needs mpi4py and mpiexec, which a GPU image may lack -------------
mpi_cuda() {
    "$PYTHON" -m pytest -q -p no:cacheprovider -m cuda tests/python/test_mpi_buffers.py ||
        return 1
    mpiexec -n 2 "$PYTHON" benchmarks/bench_mpi.py --device cuda --quick
}
export -f mpi_cuda
if "$PYTHON" -c "import mpi4py" >/dev/null 2>&1 && command -v mpiexec >/dev/null 2>&1; then
    python_step mpi 30 90 mpi_cuda
else
    absent mpi "mpi4py or mpiexec is not installed here"
fi

finish
