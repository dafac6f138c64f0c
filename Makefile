# Thin wrappers: setup, build, test, run, lint, sanitize. See README.md.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD ?= build
# meson-python's editable loader and meson itself are found on the venv's PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup run test test-c test-py sanitize valgrind lint clean

# A virtual environment with the build tools, the test peers and Tack itself,
# installed editable: importing tack rebuilds the extension when C sources change.
$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q meson-python meson ninja numpy pytest "jax[cpu]" "vtk==9.7.1" pyvista
	touch $@

setup: $(VENV)/.ready
	$(PY) -m pip install -q --no-build-isolation -Cbuild-dir=$(BUILD)/py -Csetup-args=-Dwerror=true -e .

run: setup
	$(PY) examples/arrays.py

# C unit tests (plain build), then pytest.
test: setup test-c sanitize valgrind lint test-py

test-c: $(VENV)/.ready
	$(VENV)/bin/meson setup --reconfigure $(BUILD)/c -Dpython=false -Dtests=true -Dwerror=true -Dbuildtype=debug >/dev/null
	$(VENV)/bin/meson compile -C $(BUILD)/c >/dev/null
	$(BUILD)/c/tests/c/tack_c_tests

test-py: setup
	$(PY) -m pytest -q tests/python

sanitize: $(VENV)/.ready
	$(VENV)/bin/meson setup --reconfigure $(BUILD)/asan -Dpython=false -Dtests=true -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	$(VENV)/bin/meson compile -C $(BUILD)/asan >/dev/null
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 $(BUILD)/asan/tests/c/tack_c_tests

valgrind: test-c
	TACK_TEST_NO_FORK=0 valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect --trace-children=yes --trace-children-skip='*gcc*,*clang*,*/cc,*/c99' $(BUILD)/c/tests/c/tack_c_tests

lint:
	clang-format --dry-run -Werror include/tack/*.h csrc/runtime/*.[ch] csrc/backends/*.[ch] csrc/backends/*/*.c csrc/python/*.[ch] tests/c/*.[ch]
	cppcheck -q --error-exitcode=1 --enable=warning,portability --inline-suppr --std=c11 -Iinclude csrc/runtime csrc/backends

clean:
	rm -rf $(BUILD)
