"""Exception classes: one base, and the builtin docs/errors.md names for each kind."""

import numpy as np
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


def test_runtime_remedies_are_worded_for_python():
    """The runtime says what to do in C terms; the binding words it for Python."""
    ro = tack.from_dlpack(_read_only_numpy())
    with pytest.raises(BufferError) as e:
        ro.__dlpack__()
    assert "max_version=(1, 0)" in str(e.value) and "copy=True" in str(e.value)
    assert "tack_dlpack" not in str(e.value)
    with pytest.raises(RuntimeError) as e:
        ro.fill(1)
    assert "tack.array(" in str(e.value) and "tack_array" not in str(e.value)
    a = tack.zeros(3)
    with pytest.raises(BufferError) as e:
        a.__dlpack__(stream=5)
    assert "stream=None" in str(e.value)
    with pytest.raises(BufferError) as e:
        a.__dlpack__(dl_device=(2, 0))
    assert "(1, 0) with copy=True" in str(e.value) and "kDLCPU" not in str(e.value)
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    with pytest.raises(ValueError) as e:
        tack.from_dlpack(strided)
    assert "copy=True" in str(e.value) and "TACK_DLPACK" not in str(e.value)


def _read_only_numpy():
    x = np.arange(4.0)
    x.flags.writeable = False
    return x
