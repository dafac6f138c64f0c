# Thin wrappers: setup, build, test, run, lint, sanitize. See README.md.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD ?= build
# Parallel jobs for the steps that split into independent processes (lint, pytest).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# meson-python's editable loader and meson itself are found on the venv's PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup run test test-c test-py sanitize sanitize-py valgrind lint clean example-c typecheck
.PHONY: example-in-situ bench
.PHONY: fuzz fuzz-ci fuzz-kernels configure-c build-c tools check

# The LLVM of clang (fuzzing), clang-tidy and clang-format: Debian 12's. Their findings
# and formatting differ between versions, so lint is pinned to one.
LLVM_VERSION ?= 14
CLANG_TIDY ?= clang-tidy-$(LLVM_VERSION)
CLANG_FORMAT ?= clang-format-$(LLVM_VERSION)

# A virtual environment with the build tools, the test peers and Tack itself,
# installed editable: importing tack rebuilds the extension when C sources change.
$(VENV)/.ready: pyproject.toml
	PYTHON=$(PYTHON) scripts/ensure_tools.sh setup
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q meson-python meson ninja numpy pytest pytest-xdist ruff mypy "jax[cpu]" "vtk==9.7.1" pyvista
	touch $@

# MPI for the distributed tests and example: mpi4py and MPICH's PyPI wheel (mpiexec runs
# as root and oversubscribed without flags). A stamp of its own, so an existing
# environment gains it on the next `make setup`.
$(VENV)/.mpi-ready: $(VENV)/.ready
	$(PY) -m pip install -q "mpi4py>=4.1" "mpich>=4.2"
	touch $@

# Intel's OpenCL CPU runtime, a real consumer of the SPIR-V Tack makes for Level Zero
# (docs/level_zero.md). Test-only and under Intel's licence: installed into the
# environment, never into the repository. intel-cmplr-lib-rt is a dependency the
# runtime does not declare (it needs its libsvml.so).
$(VENV)/.opencl-ready: $(VENV)/.ready
	$(PY) -m pip install -q "intel-opencl-rt==2026.2.0" "intel-cmplr-lib-rt==2026.2.0"
	touch $@

# dpctl, a real kDLOneAPI peer (tests/python/test_level_zero_dlpack.py), with the 2025.3
# SYCL and OpenCL runtimes it was built for: a prefix of its own, beside .venv's 2026.2.0
# OpenCL runtime, which only that test's child puts on its paths (tests/python/dpctl_peer.py).
# Test-only, under Intel's licence, never in the repository: about 410 MB to download,
# 1.5 GB on disk, 15 s to install from pip's cache. --no-deps with every package pinned,
# so that no second NumPy shadows .venv's. A failed install stops `make test`; `make
# test-py` and `make sanitize-py` then require the peer (TACK_REQUIRE_DPCTL_PEER=1), a
# plain pytest skips the test without it and says why.
DPCTL_PEER := $(VENV)/dpctl-peer
DPCTL_PACKAGES := "dpctl==0.20.2" "intel-sycl-rt==2025.3.3" "intel-cmplr-lib-ur==2025.3.3" \
	"intel-cmplr-lib-rt==2025.3.3" "intel-cmplr-lic-rt==2025.3.3" "intel-opencl-rt==2025.3.3" \
	"tbb==2022.3.1" "tcmlib==1.6.0" "umf==1.0.3"
$(VENV)/.dpctl-ready: $(VENV)/.ready
	rm -rf $(DPCTL_PEER)
	$(PY) -m pip install -q --no-deps --ignore-installed --no-warn-script-location \
		--prefix $(DPCTL_PEER) $(DPCTL_PACKAGES) || \
		{ echo "error: the dpctl peer did not install into $(DPCTL_PEER) (see above)" >&2; exit 1; }
	touch $@

.PHONY: dpctl-peer
dpctl-peer: $(VENV)/.dpctl-ready

setup: $(VENV)/.ready $(VENV)/.mpi-ready $(VENV)/.opencl-ready
	$(PY) -m pip install -q --no-build-isolation -Cbuild-dir=$(BUILD)/py -Csetup-args=-Dwerror=true -e .

# The main example: VTK's image scalars computed by a Tack kernel without copies;
# writes radius.vti and radius.png.
run: setup
	$(PY) examples/vtk_interop.py --output radius.vti

# The strict stand-in CUDA driver and its conformance suite (docs/cuda.md), built with
# the C tests; the suite runs against the stand-in in each build flavour.
STANDIN := tests/standin
STANDIN_CUDA := $(STANDIN)/libtack_standin_cuda.so
CUDA_CONFORMANCE := $(STANDIN)/tack_cuda_conformance
# Valgrind's cost grows with the stand-in's mapped device memory: keep it small there.
VALGRIND_STANDIN_MEMORY := 268435456

# Every program the tests call, checked first: as root the missing Debian packages are
# installed, otherwise they are named with the command that installs them.
tools:
	PYTHON=$(PYTHON) LLVM_VERSION=$(LLVM_VERSION) scripts/ensure_tools.sh test

# C unit tests (plain build), then pytest.
test: tools setup test-c example-c example-in-situ typecheck sanitize valgrind lint fuzz-ci sanitize-py test-py

# The fast loop while working: the C unit tests and pytest, nothing else.
check: test-c test-py

# Configuring also writes the generated header $(BUILD)/c/include/tack/version.h.
configure-c: $(VENV)/.ready
	$(VENV)/bin/meson setup --reconfigure $(BUILD)/c -Dpython=false -Dtests=true -Dwerror=true -Dbuildtype=debug >/dev/null

# The plain C build (library, C tests, stand-in, conformance suite), without running it.
build-c: configure-c
	$(VENV)/bin/meson compile -C $(BUILD)/c >/dev/null

test-c: build-c
	$(BUILD)/c/tests/c/tack_c_tests
	$(BUILD)/c/$(CUDA_CONFORMANCE) $(BUILD)/c/$(STANDIN_CUDA)
	@$(MAKE) --no-print-directory test-c-level-zero-modes

# The Level Zero C tests again in the loader's other modes (docs/level_zero.md): through
# its intercept layer, its validation layer, both, and with two drivers (the stand-in
# under a second name beside it); the plain run is above. Tests named *_plain_mode use a
# destroyed handle, which the intercept layer cannot survive.
LEVEL_ZERO_C_TESTS = $(shell sed -n 's/^TACK_TEST(\(level_zero_[A-Za-z0-9_]*\)).*/\1/p' tests/c/test_level_zero_backend.c | grep -v '_plain_mode$$')
STANDIN_ZE := $(abspath $(BUILD)/c/tests/standin/level_zero/libtack_standin_ze.so)
STANDIN_ZE_SECOND := $(abspath $(BUILD)/c/tests/standin/level_zero/libtack_standin_ze_second.so)
LEVEL_ZERO_MODES := "ZE_ENABLE_LOADER_INTERCEPT=1" \
	"ZE_ENABLE_VALIDATION_LAYER=1 ZE_ENABLE_PARAMETER_VALIDATION=1" \
	"ZE_ENABLE_LOADER_INTERCEPT=1 ZE_ENABLE_VALIDATION_LAYER=1 ZE_ENABLE_PARAMETER_VALIDATION=1" \
	"TACK_TEST_ZE_DRIVERS=$(STANDIN_ZE),$(STANDIN_ZE_SECOND)"
.PHONY: test-c-level-zero-modes
test-c-level-zero-modes:
	@if pkg-config --exists level-zero; then \
		cp $(STANDIN_ZE) $(STANDIN_ZE_SECOND) || exit 1; \
		for mode in $(LEVEL_ZERO_MODES); do for t in $(LEVEL_ZERO_C_TESTS); do \
			env $$mode $(BUILD)/c/tests/c/tack_c_tests $$t > /dev/null || \
				{ echo "FAIL $$t ($$mode)"; exit 1; }; \
		done; done; \
		echo "level_zero C tests: passed in 4 more loader modes"; \
	fi

# The C host example, built the way a user builds it: libtack and its headers
# installed into a prefix, the program compiled and linked through pkg-config.
PREFIX := $(CURDIR)/$(BUILD)/prefix
example-c: $(VENV)/.ready
	$(VENV)/bin/meson setup --reconfigure $(BUILD)/lib -Dpython=false -Dshared_lib=true -Dwerror=true --prefix=$(PREFIX) --libdir=lib >/dev/null
	$(VENV)/bin/meson install -C $(BUILD)/lib >/dev/null
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror examples/c/tack_host.c \
		$$(PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig pkg-config --cflags --libs tack) \
		-Wl,-rpath,$(PREFIX)/lib -o $(BUILD)/tack_host
	$(BUILD)/tack_host

# The in situ example (docs/in_situ.md), built through the installed package's flags
# and the embedding flags of the venv's interpreter, then run with its analysis script;
# tests/python/test_in_situ_example.py checks its numbers, under valgrind and ASan too.
PY_CONFIG = $$($(PY) -c 'import sys, sysconfig; print(sys.base_prefix + "/bin/python" + sysconfig.get_python_version() + "-config")')
example-in-situ: setup
	mkdir -p $(BUILD)/in_situ
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror examples/c/in_situ.c \
		$$($(PY) -m tack --cflags --libs) $$($(PY_CONFIG) --embed --cflags --ldflags) -lm \
		-o $(BUILD)/in_situ/in_situ
	$(BUILD)/in_situ/in_situ --python $(PY) --out $(BUILD)/in_situ

# The stubs against the extension as built (stubtest); the package (the kernel
# compiler included) and the examples under mypy --strict. mypy's settings are in
# pyproject.toml.
MYPY_CACHE := $(BUILD)/mypy-cache
typecheck: setup
	$(PY) -m mypy.stubtest --mypy-config-file pyproject.toml --concise tack
	$(PY) -m mypy --strict --config-file pyproject.toml --cache-dir $(MYPY_CACHE) src/tack
	$(PY) -m mypy --strict --config-file pyproject.toml --cache-dir $(MYPY_CACHE) examples
	$(PY) -m mypy --strict --config-file pyproject.toml --cache-dir $(MYPY_CACHE) docs/examples

# pytest-xdist spreads the tests over $(JOBS) processes: each test is still one process's.
# --dist loadgroup hands them out one at a time, in the order conftest.py puts them
# (the long ones first), and keeps a module marked xdist_group on one worker.
# The dpctl peer is installed first, so its test fails rather than skips without it.
test-py: setup $(VENV)/.dpctl-ready
	TACK_REQUIRE_DPCTL_PEER=1 $(PY) -m pytest -q -n $(JOBS) --dist loadgroup -m "not soak" --durations=15 tests/python

# The reruns of whole fuzzer seeds that take minutes each (marked soak): make test runs
# the quicker tests that pin the same faults instead.
.PHONY: soak
soak: setup
	$(PY) -m pytest -q -n $(JOBS) -m soak tests/python

sanitize: $(VENV)/.ready
	$(VENV)/bin/meson setup --reconfigure $(BUILD)/asan -Dpython=false -Dtests=true -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	$(VENV)/bin/meson compile -C $(BUILD)/asan >/dev/null
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 $(BUILD)/asan/tests/c/tack_c_tests
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 $(BUILD)/asan/$(CUDA_CONFORMANCE) $(BUILD)/asan/$(STANDIN_CUDA)

# The extension built with ASan+UBSan, run under pytest, staged as the package is
# installed (the extension beside lib/libtack.so, lib/pkgconfig/tack.pc and include/).
# A second environment sees the first one's packages through a plain path entry, so
# the editable hook of .venv (which would import the ordinary build) is not run, and
# tack comes from the sanitized stage.
# mpi4py looks for MPICH's library under its own prefix, so it is named for the second one.
# So is the dpctl peer, whose test runs here too (Tack reading a real producer's capsules),
# and Intel's OpenCL CPU runtime, which the Level Zero stand-in executes SPIR-V on.
ASAN_PY := $(BUILD)/asan-py
sanitize-py: $(VENV)/.ready $(VENV)/.dpctl-ready
	$(VENV)/bin/meson setup --reconfigure $(ASAN_PY) -Dpython=true -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dpython.install_env=auto >/dev/null
	$(VENV)/bin/meson compile -C $(ASAN_PY) >/dev/null
	rm -rf $(ASAN_PY)/stage && mkdir -p $(ASAN_PY)/stage && cp -r src/tack $(ASAN_PY)/stage/ && cp $(ASAN_PY)/_tack*.so $(ASAN_PY)/stage/tack/
	mkdir -p $(ASAN_PY)/stage/tack/lib/pkgconfig && cp $(ASAN_PY)/libtack.so $(ASAN_PY)/stage/tack/lib/ && cp $(ASAN_PY)/tack.pc $(ASAN_PY)/stage/tack/lib/pkgconfig/ && cp -r $(ASAN_PY)/include $(ASAN_PY)/stage/tack/
	test -x $(ASAN_PY)/venv/bin/python || $(PYTHON) -m venv --without-pip $(ASAN_PY)/venv
	$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > $(ASAN_PY)/venv/lib/deps.txt
	cp $(ASAN_PY)/venv/lib/deps.txt "$$($(ASAN_PY)/venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/deps.pth"
	LD_PRELOAD="$$(cc -print-file-name=libasan.so) $$(cc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	MPI4PY_LIBMPI=$(CURDIR)/$(VENV)/lib TACK_DPCTL_PEER=$(CURDIR)/$(DPCTL_PEER) TACK_REQUIRE_DPCTL_PEER=1 \
	TACK_OPENCL_RUNTIME_DIR=$(CURDIR)/$(VENV)/lib \
	PYTHONPATH=$(CURDIR)/$(ASAN_PY)/stage $(ASAN_PY)/venv/bin/python -m pytest -q -n $(JOBS) --dist loadgroup -p no:cacheprovider -m "not slow" --durations=15 tests/python

# valgrind cannot execute AVX-512 instructions, which -march=native kernels use on
# CPUs that have them: the kernels compiled under valgrind leave them out.
# Then one launch of a SPIR-V module through the real loader on the stand-in, executed
# by Intel's OpenCL CPU runtime, with the child under memcheck (level_zero_helpers:
# TACK_TEST_VALGRIND); it must run, not skip.
VALGRIND_ZE_TEST := tests/python/test_level_zero_standin_spirv.py::test_a_launch_executes_its_spirv_on_opencl[plain]
# The C tests run as two shards side by side (TACK_TEST_SHARD, tests/c/harness.c), one
# per core, each log printed whole once both are done.
VALGRIND_C_TESTS = CC="$${CC:-cc} -mno-avx512f" valgrind -q --error-exitcode=9 --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite,indirect --trace-children=yes --trace-children-skip='*gcc*,*clang*,*/cc,*/c99' $(BUILD)/c/tests/c/tack_c_tests
valgrind: build-c setup
	TACK_TEST_SHARD=0/2 $(VALGRIND_C_TESTS) > $(BUILD)/valgrind-c0.log 2>&1 & first=$$!; \
	TACK_TEST_SHARD=1/2 $(VALGRIND_C_TESTS) > $(BUILD)/valgrind-c1.log 2>&1 & second=$$!; \
	a=0; wait $$first || a=$$?; b=0; wait $$second || b=$$?; \
	cat $(BUILD)/valgrind-c0.log $(BUILD)/valgrind-c1.log; \
	test $$a -eq 0 && test $$b -eq 0
	TACK_STANDIN_MEMORY=$(VALGRIND_STANDIN_MEMORY) valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect $(BUILD)/c/$(CUDA_CONFORMANCE) $(BUILD)/c/$(STANDIN_CUDA)
	TACK_TEST_VALGRIND=1 $(PY) -m pytest -q -p no:cacheprovider "$(VALGRIND_ZE_TEST)" | tee $(BUILD)/valgrind-ze.log
	grep -q "1 passed" $(BUILD)/valgrind-ze.log

lint: build-c setup
	printf '%s\n' csrc/runtime/*.c csrc/backends/*.c csrc/backends/*/*.c tests/standin/*/*.c | \
		xargs -P $(JOBS) -n 6 $(CLANG_TIDY) -quiet -p $(BUILD)/c
	printf '%s\n' csrc/python/*.c | xargs -P $(JOBS) -n 4 $(CLANG_TIDY) -quiet -p $(BUILD)/py
	$(CLANG_FORMAT) --dry-run -Werror include/tack/*.h csrc/runtime/*.[ch] csrc/backends/*.[ch] csrc/backends/*/*.[ch] csrc/python/*.[ch] tests/c/*.[ch] tests/c/*.cc tests/fuzz/*.c examples/c/*.c tests/python/producer/*.c tests/python/embed/*.c tests/standin/*/*.[ch]
	$(VENV)/bin/ruff check src tests examples benchmarks docs
	cppcheck -q --error-exitcode=1 --enable=warning,portability --inline-suppr --std=c11 -Iinclude -I$(BUILD)/c/include csrc/runtime csrc/backends tests/standin
	shellcheck scripts/*.sh

clean:
	rm -rf $(BUILD)

# libFuzzer over the DLPack importer (clang, ASan+UBSan), FUZZ_SECONDS of fuzzing. It
# is built from meson's runtime_sources, as the configured C build lists them.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang-$(LLVM_VERSION)
# CI fuzzes for a bounded time from an empty corpus in the build folder.
fuzz-ci:
	@mkdir -p $(BUILD)/fuzz
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30 FUZZ_CORPUS=$(BUILD)/fuzz/corpus \
		> $(BUILD)/fuzz/ci.log 2>&1 || { tail -n 40 $(BUILD)/fuzz/ci.log; exit 1; }
	@grep -E "^Done|number_of_executed_units" $(BUILD)/fuzz/ci.log

FUZZ_CORPUS ?= fuzz-corpus
fuzz: configure-c
	mkdir -p $(BUILD)/fuzz $(FUZZ_CORPUS)
	$(FUZZ_CC) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -I$(BUILD)/c/include -Icsrc/runtime tests/fuzz/fuzz_dlpack_import.c $$($(PY) tests/fuzz/runtime_sources.py $(BUILD)/c) -o $(BUILD)/fuzz/fuzz_dlpack_import -ldl -lpthread -lm
	ASAN_OPTIONS=allocator_may_return_null=1 $(BUILD)/fuzz/fuzz_dlpack_import -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ $(FUZZ_CORPUS) tests/fuzz/seeds

# The differential fuzzer of the kernel compiler (docs/kernels.md, "The fuzzer"): random
# kernels on the CPU path, as Python and as their emulated CUDA module. `make test`
# runs a short fixed-seed sweep of it through pytest (tests/python/test_kernel_fuzz.py).
KERNEL_FUZZ_SEED ?= 0
KERNEL_FUZZ_COUNT ?= 500
fuzz-kernels: setup
	$(PY) tests/python/kernel_fuzz.py --seed $(KERNEL_FUZZ_SEED) --count $(KERNEL_FUZZ_COUNT)

# Every benchmark in benchmarks/ this machine can run, BENCH_RUNS process runs each,
# printed as the tables of benchmarks/RESULTS.md with median (min-max) per cell, the
# machine and the command (benchmarks/_harness.py). Numba is a peer of the kernel
# benchmarks only, so it is installed here and not by `make setup`.
BENCH_RUNS ?= 3
$(VENV)/.bench-ready: $(VENV)/.ready
	$(PY) -m pip install -q numba
	touch $@

bench: setup $(VENV)/.bench-ready
	$(PY) benchmarks/_harness.py --runs $(BENCH_RUNS)
