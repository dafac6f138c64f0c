#!/usr/bin/env bash
# ensure_tools.sh: checks, before a make target starts, that the programs it calls are
# on this machine. Run from the repository root:
#
#     scripts/ensure_tools.sh setup    # what `make setup` (and so `make run`) needs
#     scripts/ensure_tools.sh test     # what `make test` needs (the default)
#
# Run as root (as CI is), it installs what is missing from Debian's archive: one
# `apt-get update`, one `apt-get install -y`, then every check again. Otherwise it
# names what is missing, the Debian packages and the command that installs them, and
# fails. With everything present it installs nothing and takes about two seconds (a
# few compiles prove the compilers and their runtimes work, not just exist).
#
# Environment: PYTHON, the Python `make setup` builds the environment with (python3);
# LLVM_VERSION, the LLVM of clang, clang-tidy and clang-format (14, Debian 12's: their
# output differs between versions, so lint is pinned to one).
#
# The CUDA toolkit is not checked as a requirement: it is not in Debian's main archive,
# and the tests that need nvcc, ptxas or NVRTC skip without it (a note says so).
# The probes below are called through need(), which shellcheck cannot follow.
# shellcheck disable=SC2317
set -u

group=${1:-test}
case $group in
setup | test) ;;
*)
    echo "usage: $0 [setup|test]" >&2
    exit 2
    ;;
esac
python=${PYTHON:-python3}
llvm=${LLVM_VERSION:-14}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- probes: each succeeds only when the tool works as the Makefile uses it ------------

have() { command -v "$1" >/dev/null 2>&1; }

# cc, libc's headers and, for `make sanitize`, GCC's ASan and UBSan runtimes.
c_compiler() {
    printf 'int main(void) { return 0; }\n' >"$tmp/t.c"
    if [ "$group" = test ]; then
        cc -fsanitize=address -fsanitize=undefined "$tmp/t.c" -o "$tmp/t"
    else
        cc "$tmp/t.c" -o "$tmp/t"
    fi
}

# The CUDA host emulation tests compile kernels as C++20 with std::barrier.
cxx20_barrier() {
    printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' \
        >"$tmp/t.cc"
    g++ -std=c++20 -pthread -fsyntax-only "$tmp/t.cc"
}

# `make fuzz`: clang with the libFuzzer, ASan and UBSan runtimes.
libfuzzer() {
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$tmp/f.c"
    "clang-$llvm" -fsanitize=fuzzer,address,undefined "$tmp/f.c" -o "$tmp/f"
}

# The Level Zero backend's tests: the loader (libze1, which dlopens drivers and layers)
# and its headers (libze-dev: the ze_abi.h check and the stand-in driver build on them).
level_zero_loader() {
    printf '#include <ze_api.h>\nint main(void) { return zeInit(0) == ZE_RESULT_SUCCESS; }\n' \
        >"$tmp/ze.c"
    # shellcheck disable=SC2046 # pkg-config's flags are words
    cc $(pkg-config --cflags level-zero) "$tmp/ze.c" -o "$tmp/ze" -lze_loader
}

# SPIR-V from the kernel compiler's OpenCL C: clang-15 and llvm-spirv-15 are the matched
# pair on Debian 12 (clang-16 bitcode does not read back into llvm-spirv-15).
opencl_c_to_spirv() {
    printf '__kernel void k(__global float *x) { x[get_global_id(0)] = 1.0f; }\n' >"$tmp/k.cl"
    clang-15 -cl-std=CL3.0 -target spir64 -O2 -emit-llvm -c "$tmp/k.cl" -o "$tmp/k.bc" &&
        llvm-spirv-15 --spirv-max-version=1.2 "$tmp/k.bc" -o "$tmp/k.spv"
}

python_venv() { "$python" -c 'import ensurepip, venv'; }

python_headers() {
    "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}

# Debian's own python3 is the one apt can complete; another (pyenv, conda) cannot be.
debian_python() { [ "$("$python" -c 'import sys; print(sys.base_prefix)' 2>/dev/null)" = /usr ]; }

# ---- the checks ---------------------------------------------------------------------

missing=()  # "what|packages" for each failed check
packages=() # the union of their packages

# need WHAT PACKAGES PROBE...: runs the probe, quietly; records WHAT when it fails.
need() {
    local what=$1 pkgs=$2
    shift 2
    if ! "$@" >/dev/null 2>&1; then
        missing+=("$what|$pkgs")
        local p
        for p in $pkgs; do
            [[ " ${packages[*]} " == *" $p "* ]] || packages+=("$p")
        done
    fi
}

python_packages() {
    if debian_python; then
        echo "$1"
    fi
}

check_all() {
    missing=()
    packages=()
    need "cc (a C compiler and libc headers)" "gcc libc6-dev" c_compiler
    need "$python -m venv" "$(python_packages python3-venv)" python_venv
    need "Python.h for $python" "$(python_packages python3-dev)" python_headers
    [ "$group" = test ] || return 0
    need "g++ with C++20 <barrier>" "g++" cxx20_barrier
    need "pkg-config" "pkgconf" have pkg-config
    need "valgrind" "valgrind" have valgrind
    need "clang-$llvm with libFuzzer" "clang-$llvm libclang-rt-$llvm-dev" libfuzzer
    need "clang-tidy-$llvm" "clang-tidy-$llvm" have "clang-tidy-$llvm"
    need "clang-format-$llvm" "clang-format-$llvm" have "clang-format-$llvm"
    need "cppcheck" "cppcheck" have cppcheck
    need "shellcheck" "shellcheck" have shellcheck
    need "the Level Zero loader and headers" "libze1 libze-dev" level_zero_loader
    need "clang-15 (OpenCL C to SPIR-V)" "clang-15" have clang-15
    need "llvm-spirv-15" "llvm-spirv-15" have llvm-spirv-15
    need "clang-15 and llvm-spirv-15 making SPIR-V" "clang-15 llvm-spirv-15" opencl_c_to_spirv
    need "spirv-val" "spirv-tools" have spirv-val
}

report() {
    echo "make $group needs what this machine lacks:" >&2
    local entry what pkgs
    for entry in "${missing[@]}"; do
        what=${entry%%|*}
        pkgs=${entry#*|}
        if [ -n "$pkgs" ]; then
            local noun=package
            [[ $pkgs == *" "* ]] && noun=packages
            printf '  %-34s Debian %s: %s\n' "$what" "$noun" "$pkgs" >&2
        else
            printf '  %-34s %s is not Debian'"'"'s python3: install its venv module and headers with it, or run make with PYTHON=/usr/bin/python3\n' \
                "$what" "$python" >&2
        fi
    done
}

check_all
if [ "${#missing[@]}" -gt 0 ] && [ "${#packages[@]}" -gt 0 ] && [ "$(id -u)" = 0 ]; then
    echo "installing ${packages[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2 || exit 1
    apt-get install -y -q --no-install-recommends "${packages[@]}" >&2 || exit 1
    check_all
fi
if [ "${#missing[@]}" -gt 0 ]; then
    report
    if [ "${#packages[@]}" -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            echo "they are still missing after apt-get install ${packages[*]}" >&2
        else
            echo "install them as root, then run make again:" >&2
            echo "  sudo apt-get update && sudo apt-get install -y ${packages[*]}" >&2
        fi
    fi
    exit 1
fi

if [ "$group" = test ] && ! have nvcc && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "note: no CUDA toolkit (nvcc): the cuda_abi.h check and the NVRTC and ptxas" \
        "tests are skipped; NVIDIA's toolkit (not in Debian main) adds them" >&2
fi
exit 0
