"""Exception classes: one base, and the builtin docs/errors.md names for each kind."""

import pytest

import tack


@pytest.mark.parametrize(
    "cls,builtins",
    [
        (tack.TackValueError, (ValueError,)),
        (tack.TackTypeError, (TypeError,)),
        (tack.TackIndexError, (IndexError,)),
        (tack.TackOverflowError, (OverflowError,)),
        (tack.TackMemoryError, (MemoryError,)),
        (tack.TackRuntimeError, (RuntimeError,)),
        (tack.ReadOnlyError, (RuntimeError,)),
        (tack.DeviceUnavailableError, (RuntimeError,)),
        (tack.DLPackExportError, (BufferError,)),
        (tack.DLPackError, (ValueError, BufferError)),
        (tack.DLPackTypeError, (TypeError, BufferError)),
        (tack.DLPackDeviceError, (RuntimeError, BufferError)),
        (tack.TackZeroDivisionError, (ZeroDivisionError,)),
        (tack.CompileError, (RuntimeError,)),
        (tack.KernelError, (SyntaxError,)),
    ],
)
def test_classes_derive_from_tack_error_and_the_builtin(cls, builtins):
    assert issubclass(cls, tack.TackError)
    for b in builtins:
        assert issubclass(cls, b)
    assert cls.__module__ == "tack"


def test_kernel_error_carries_location():
    e = tack.KernelError("bad construct", ("k.py", 3, 1, "x = 1\n"))
    assert e.filename == "k.py" and e.lineno == 3


def test_raised_errors_are_tack_errors_with_messages():
    with pytest.raises(tack.TackError) as info:
        tack.empty(-3)
    assert "negative" in str(info.value)
