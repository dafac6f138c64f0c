"""TACK_DEBUG as a kernel decorated without debug= reads it: every change of the
environment reaches the next call of the same kernel object, however the C library's
entry array moved (added, changed, removed, shifted entries) and when a putenv'd
buffer is edited in place."""
import ctypes
import os

import pytest

import tack


@pytest.fixture
def divide():
    @tack.kernel
    def quotient(out, num, den):
        out[0] = num // den

    out = tack.zeros(1, dtype=tack.i64)

    def checked() -> bool:
        """Whether the call ran the debug variant (it raises on 1 // 0)."""
        try:
            quotient(out, 1, 0)
        except ZeroDivisionError:
            return True
        return False

    return checked


NAMES = ("TACK_DEBUG", "TACK_TEST_ENV_BEFORE", "TACK_TEST_ENV_AFTER")


@pytest.fixture
def clean_env():
    """The variables unset for the test and put back as they were after it (the
    tests change them through os.environ itself, as a program would)."""
    saved = {name: os.environ.pop(name, None) for name in NAMES}
    yield
    for name, value in saved.items():
        os.environ.pop(name, None)
        if value is not None:
            os.environ[name] = value


def test_values_added_changed_and_removed(divide, clean_env):
    assert not divide()
    assert not divide()  # the environment unchanged since the last call
    os.environ["TACK_DEBUG"] = "1"  # a new entry
    assert divide()
    assert divide()
    os.environ["TACK_DEBUG"] = "0"  # the same entry, another value
    assert not divide()
    os.environ["TACK_DEBUG"] = ""
    assert not divide()
    os.environ["TACK_DEBUG"] = "yes"
    assert divide()
    del os.environ["TACK_DEBUG"]
    assert not divide()


def test_entries_shifted_by_other_variables(divide, clean_env):
    os.environ["TACK_TEST_ENV_BEFORE"] = "x"
    os.environ["TACK_DEBUG"] = "1"
    os.environ["TACK_TEST_ENV_AFTER"] = "x"
    assert divide()
    del os.environ["TACK_TEST_ENV_BEFORE"]  # TACK_DEBUG's entry moves down a slot
    assert divide()
    del os.environ["TACK_DEBUG"]  # the one after it takes its slot
    assert not divide()
    os.environ["TACK_TEST_ENV_BEFORE"] = "y"  # the array grows again
    assert not divide()
    os.environ["TACK_DEBUG"] = "1"
    assert divide()
    del os.environ["TACK_TEST_ENV_AFTER"]  # the last entry goes: the array ends sooner
    assert divide()


def test_putenv_buffer_edited_in_place(divide, clean_env):
    libc = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(b"TACK_DEBUG=1")
    assert not divide()
    assert libc.putenv(buf) == 0  # the environment now points into buf
    try:
        assert divide()
        buf.value = b"TACK_DEBUG=0"  # the same entry pointer, new text
        assert not divide()
        buf.value = b"TACK_DEBUG=1"
        assert divide()
    finally:
        assert libc.unsetenv(b"TACK_DEBUG") == 0
    assert not divide()
