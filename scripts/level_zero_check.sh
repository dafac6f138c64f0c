#!/usr/bin/env bash
# level_zero_check.sh: Tack's Level Zero tests on a machine with an Intel GPU, against
# the driver the Level Zero loader finds there (ZE_ENABLE_ALT_DRIVERS unset), in one
# command and within a time budget. Run from the repository root:
#
#     OUT=/some/empty/dir scripts/level_zero_check.sh
#     scripts/level_zero_check.sh --dry-run    # the same steps on the driver that
#                                              # ZE_ENABLE_ALT_DRIVERS names (the stand-in)
#
# Steps, in this order:
#   device       a GPU through libze_loader.so.1 (zeInit, zeDriverGet, zeDeviceGet,
#                zeDeviceGetProperties); without one the check FAILS at once, it never
#                skips
#   probe        what the machine has: meson, ninja, a C compiler and the level-zero
#                headers (needed), Python's headers (needed: the tests are Python's),
#                clang-15, llvm-spirv-15 and spirv-val (the SPIR-V tests), VTK, dpctl
#   build        the C library, the C tests, the stand-in and the extension (the build
#                of scripts/gpu_check.sh, shared through scripts/check_steps.sh)
#   c-tests      the level_zero_* tests of tack_c_tests through this machine's loader;
#                each of them selects the strict stand-in itself (their checks are its
#                strictness), so the installed driver is tested by the next step
#   pytest-level-zero
#                tests/python/test_level_zero*.py with TACK_LEVEL_ZERO_INSTALLED_DRIVER=1:
#                the children run on the installed driver, in every loader mode but the
#                stand-in's two-driver one; the tests marked standin_ze (checks only the
#                stand-in can make: a real driver is lenient there, or the test sets the
#                stand-in's devices) are left out, and the step's log names them
#   vtk          tests/python/test_vtk_level_zero.py, where VTK imports (absent otherwise)
#
# Environment:
#   OUT                        where the results go (default build/level-zero-check):
#                              level_zero_check.json and logs.tgz (level_zero_check.log
#                              with everything, one <step>.log each)
#   PYTHON                     the interpreter (default python3)
#   LEVEL_ZERO_CHECK_BUILD     the build folder (default build/level-zero)
#   LEVEL_ZERO_CHECK_REUSE=1   use the build already there (ninja brings it up to date)
#   LEVEL_ZERO_CHECK_BUDGET    seconds for the whole check (default 400)
#
# Time with 16 cores (estimates, seconds): device 5, probe 5, build 90, c-tests 15,
# pytest-level-zero 120, vtk 15.
#
# level_zero_check.json is scripts/check_steps.sh's report. Exits 0 only when every step
# passed or is absent; 2 on a usage error.

# The step functions below run in a child shell under `timeout` (step exports them),
# which the linter cannot follow.
# shellcheck disable=SC2317
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
DRY_RUN=0
case "${1:-}" in
"") ;;
--dry-run) DRY_RUN=1 ;;
*)
    echo "usage: $0 [--dry-run]" >&2
    exit 2
    ;;
esac
if ((DRY_RUN)); then
    if [[ -z ${ZE_ENABLE_ALT_DRIVERS:-} ]]; then
        echo "--dry-run runs on the driver ZE_ENABLE_ALT_DRIVERS names (the stand-in," \
            "tests/standin/level_zero): set it" >&2
        exit 2
    fi
    export ZE_ENABLE_ALT_DRIVERS
else
    # The real driver: the loader's own search, never an alternative one.
    unset ZE_ENABLE_ALT_DRIVERS
fi
# Nothing of the stand-in's settings, or a loader of another path, reaches the tests.
unset TACK_LEVEL_ZERO_DRIVER ZE_ENABLE_LOADER_INTERCEPT ZE_ENABLE_VALIDATION_LAYER \
    ZE_ENABLE_PARAMETER_VALIDATION
while read -r name; do unset "$name"; done < <(compgen -e | grep '^TACK_STANDIN_ZE')
OUT=${OUT:-$root/build/level-zero-check}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
BUILD=${LEVEL_ZERO_CHECK_BUILD:-$root/build/level-zero}
REUSE=${LEVEL_ZERO_CHECK_REUSE:-0}
BUDGET=${LEVEL_ZERO_CHECK_BUDGET:-400}
CHECK_NAME=level_zero_check
CHECK_TITLE="Level Zero check"
# shellcheck source=scripts/check_steps.sh
. "$root/scripts/check_steps.sh"
export DRY_RUN

# ---- device: fail, never skip, without one ---------------------------------------
check_device() {
    if ((DRY_RUN)); then
        echo "dry run: the driver is $ZE_ENABLE_ALT_DRIVERS"
    else
        echo "the loader's own drivers (ZE_ENABLE_ALT_DRIVERS unset)"
    fi
    "$PYTHON" - <<'EOF'
import ctypes, sys
try:
    ze = ctypes.CDLL("libze_loader.so.1")
except OSError as e:
    sys.exit(f"no Level Zero GPU: libze_loader.so.1 does not load ({e})")
rc = ze.zeInit(1)  # ZE_INIT_FLAG_GPU_ONLY
if rc != 0:
    sys.exit(f"no Level Zero GPU: zeInit(ZE_INIT_FLAG_GPU_ONLY) returned {rc:#x} "
             "(the loader found no driver of a GPU)")
n = ctypes.c_uint32(0)
ze.zeDriverGet(ctypes.byref(n), None)
drivers = (ctypes.c_void_p * n.value)()
ze.zeDriverGet(ctypes.byref(n), drivers)
gpus = 0
for driver in drivers:
    version = ctypes.c_uint32(0)
    ze.zeDriverGetApiVersion(ctypes.c_void_p(driver), ctypes.byref(version))
    m = ctypes.c_uint32(0)
    ze.zeDeviceGet(ctypes.c_void_p(driver), ctypes.byref(m), None)
    devices = (ctypes.c_void_p * m.value)()
    ze.zeDeviceGet(ctypes.c_void_p(driver), ctypes.byref(m), devices)
    for device in devices:
        # ze_device_properties_t: stype 0x3 first, type at 16, vendorId at 20, name
        # at 112 (the buffer is larger than any version of the struct).
        props = ctypes.create_string_buffer(1024)
        ctypes.c_uint32.from_buffer(props, 0).value = 0x3
        if ze.zeDeviceGetProperties(ctypes.c_void_p(device), props) != 0:
            continue
        kind = ctypes.c_uint32.from_buffer(props, 16).value
        vendor = ctypes.c_uint32.from_buffer(props, 20).value
        name = props.raw[112:368].split(b"\0")[0].decode(errors="replace")
        print(f"driver API {version.value >> 16}.{version.value & 0xffff}: {name} "
              f"(vendor {vendor:#06x}, type {kind})")
        gpus += kind == 1  # ZE_DEVICE_TYPE_GPU
if gpus == 0:
    sys.exit(f"no Level Zero GPU: {n.value} driver(s), none with a GPU device")
print(f"{gpus} GPU device(s)")
EOF
}
export -f check_device
if ! step device 5 30 check_device; then
    say "no Level Zero GPU visible: the Level Zero check fails (it never skips)"
    finish
fi

# ---- probe: what this machine has -----------------------------------------------
probe() {
    local rc=0
    probe_build_tools || rc=1
    if has_python_headers; then
        echo "Python headers: present"
    else
        echo "Python headers: missing (the extension, which the tests need, cannot be built)"
        rc=1
    fi
    if pkg-config --exists level-zero; then
        echo "level-zero headers: $(pkg-config --modversion level-zero)"
    else
        echo "level-zero headers: missing (libze-dev; the build needs them)"
        rc=1
    fi
    probe_optional clang-15 llvm-spirv-15 spirv-val
    probe_modules numpy pytest vtkmodules dpctl
    return "$rc"
}
export -f probe
if ! step probe 5 30 probe; then
    finish
fi

# ---- build --------------------------------------------------------------------------
WITH_PYTHON=true
export WITH_PYTHON
[[ $REUSE == 1 ]] && build_estimate=10 || build_estimate=90
if ! step build "$build_estimate" 200 build; then
    finish
fi

# ---- tests ----------------------------------------------------------------------------
c_tests() {
    local names name rc=0
    names=$(sed -n 's/^TACK_TEST(\(level_zero_[A-Za-z0-9_]*\)).*/\1/p' \
        tests/c/test_level_zero_backend.c)
    echo "the C tests run on the stand-in, which each selects itself, through this" \
        "machine's loader"
    for name in $names; do
        "$BUILD/tests/c/tack_c_tests" "$name" || {
            echo "FAIL $name"
            rc=1
        }
    done
    return "$rc"
}

# Every Level Zero test file but the one that runs this script.
L0_TESTS=()
for file in tests/python/test_level_zero*.py; do
    [[ $file == */test_level_zero_check_dry_run.py ]] || L0_TESTS+=("$file")
done
# pytest on the installed driver, leaving out (and naming) the stand-in's tests;
# collecting none is a failure too (exit 5), said plainly.
pytest_installed() {
    local left_out rc
    mapfile -t left_out < <("$PYTHON" -m pytest -q -p no:cacheprovider --collect-only \
        -m standin_ze "$@" | grep '::')
    echo "left out on the installed driver: ${#left_out[@]} tests marked standin_ze" \
        "(checks only the strict stand-in can make)"
    ((${#left_out[@]})) && printf '  %s\n' "${left_out[@]}"
    TACK_LEVEL_ZERO_INSTALLED_DRIVER=1 "$PYTHON" -m pytest -q -p no:cacheprovider -rs \
        -m "not standin_ze" "$@"
    rc=$?
    ((rc == 5)) && echo "pytest collected no Level Zero test: nothing was checked"
    return "$rc"
}
export -f c_tests pytest_installed
export PYTHONPATH="$BUILD/stage"
step c-tests 15 60 c_tests
step pytest-level-zero 120 240 pytest_installed "${L0_TESTS[@]}"
if ! "$PYTHON" -c "import vtkmodules.vtkCommonCore" >/dev/null 2>&1; then
    absent vtk "VTK is not installed for $PYTHON"
else
    step vtk 15 60 pytest_installed tests/python/test_vtk_level_zero.py
fi

finish
