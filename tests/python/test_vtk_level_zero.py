"""init_level_zero() and the shared-context guard of tack.interop.vtk.

No VTK has level_zero_handles() yet, and these machines have no Level Zero driver, so
VTK's handle function is replaced by a stand-in (monkeypatching the function that
fetches VTK's module), and the guard is given stand-in devices that report what a
Level Zero device reports: its backend name and whether it adopted a context.
"""

import types

import numpy as np
import pytest

import tack
from tack.interop import vtk as tv

# VTK is optional: without it the module is skipped, never an error.
vtkFloatArray = pytest.importorskip("vtkmodules.vtkCommonCore").vtkFloatArray

HANDLES = {"driver": 0x1000, "device": 0x2000, "context": 0x3000}


def vtk_with(**attributes):
    """Stand in for VTK's dlpack_support with the given attributes."""
    module = types.SimpleNamespace(**attributes)
    return lambda: module


class StandInDevice:
    """Reports what the guard reads from a Level Zero tack.Device."""

    name = "level_zero"

    def __init__(self, shares_external_context):
        self.shares_external_context = shares_external_context


def level_zero_device(shares_external_context):
    return StandInDevice(shares_external_context)


def test_init_level_zero_refuses_a_vtk_without_dlpack_support():
    # The real 9.7.1 wheel: no vtkmodules.util.dlpack_support at all.
    with pytest.raises(RuntimeError):
        tv.init_level_zero()


@pytest.mark.parametrize(
    "support",
    [
        vtk_with(),  # dlpack_support without level_zero_handles
        vtk_with(level_zero_handles=lambda: None),  # not on a Level Zero device
        vtk_with(level_zero_handles=dict),
    ],
)
def test_init_level_zero_refuses_a_vtk_without_handles(monkeypatch, support):
    monkeypatch.setattr(tv, "_vtk_module", support)
    with pytest.raises(RuntimeError):
        tv.init_level_zero()
    assert tack.get_default_device().name == "cpu"


# It needs the driver to be absent, which it is but for scripts/level_zero_check.sh.
@pytest.mark.standin_ze
def test_init_level_zero_passes_vtks_handles_to_the_backend(monkeypatch):
    monkeypatch.setattr(
        tv, "_vtk_module", vtk_with(level_zero_handles=lambda: dict(HANDLES))
    )
    # Valid handles reach the backend, which needs its driver: absent here.
    with pytest.raises(tack.DeviceUnavailableError):
        tv.init_level_zero()
    # A null context is refused by the backend before it loads the driver, which
    # shows the handles are VTK's, passed through unchanged.
    null_context = dict(HANDLES, context=0)
    monkeypatch.setattr(
        tv, "_vtk_module", vtk_with(level_zero_handles=lambda: null_context)
    )
    with pytest.raises(ValueError):
        tv.init_level_zero()


def test_the_guard_does_nothing_on_other_backends():
    # Even with a VTK that has no handles at all (the real wheel).
    tv._require_shared_level_zero_context(tack.device("cpu"))


def test_the_guard_refuses_when_vtk_has_no_handles(monkeypatch):
    device = level_zero_device(True)
    monkeypatch.setitem(tv._adopted_handles, device, dict(HANDLES))
    with pytest.raises(RuntimeError):  # the real wheel: no dlpack_support
        tv._require_shared_level_zero_context(device)
    monkeypatch.setattr(tv, "_vtk_module", vtk_with(level_zero_handles=lambda: None))
    with pytest.raises(RuntimeError):
        tv._require_shared_level_zero_context(device)


def test_the_guard_refuses_a_private_context(monkeypatch):
    monkeypatch.setattr(
        tv, "_vtk_module", vtk_with(level_zero_handles=lambda: dict(HANDLES))
    )
    with pytest.raises(RuntimeError):
        tv._require_shared_level_zero_context(level_zero_device(False))


def test_the_guard_compares_contexts(monkeypatch):
    monkeypatch.setattr(
        tv, "_vtk_module", vtk_with(level_zero_handles=lambda: dict(HANDLES))
    )
    same = level_zero_device(True)
    other = level_zero_device(True)
    monkeypatch.setitem(tv._adopted_handles, same, dict(HANDLES))
    monkeypatch.setitem(tv._adopted_handles, other, dict(HANDLES, context=0x4000))
    tv._require_shared_level_zero_context(same)
    with pytest.raises(RuntimeError):
        tv._require_shared_level_zero_context(other)
    # A device adopted some other way, which Tack has no record of, is refused.
    with pytest.raises(RuntimeError):
        tv._require_shared_level_zero_context(level_zero_device(True))


def test_a_device_that_reports_its_context_is_believed(monkeypatch):
    monkeypatch.setattr(
        tv, "_vtk_module", vtk_with(level_zero_handles=lambda: dict(HANDLES))
    )
    device = level_zero_device(True)
    device.external_context = dict(HANDLES)
    tv._require_shared_level_zero_context(device)
    device.external_context = dict(HANDLES, context=0x5000)
    with pytest.raises(RuntimeError):
        tv._require_shared_level_zero_context(device)


def test_both_exchanges_call_the_guard_with_the_arrays_device(monkeypatch):
    seen = []
    monkeypatch.setattr(tv, "_require_shared_level_zero_context", seen.append)
    values = tack.array(np.arange(4, dtype=np.float32))
    exported = tv.array_to_vtk(values)
    source = vtkFloatArray(number_of_tuples=3)
    imported = tv.vtk_to_array(source)
    assert seen == [values.device, imported.device]
    assert exported.GetNumberOfTuples() == 4


def test_a_refusing_guard_stops_the_exchange(monkeypatch):
    def refuse(device):
        raise tack.TackRuntimeError("contexts differ")

    monkeypatch.setattr(tv, "_require_shared_level_zero_context", refuse)
    with pytest.raises(RuntimeError):
        tv.array_to_vtk(tack.zeros(3))
    with pytest.raises(RuntimeError):
        tv.vtk_to_array(vtkFloatArray(number_of_tuples=3))


def test_a_vtk_module_with_only_level_zero_handles_does_not_replace_the_exchange(
    monkeypatch,
):
    """A VTK whose dlpack_support reports handles but cannot exchange arrays (as a
    stand-in for the handle function is) leaves host exchange to Tack's own module."""
    import sys
    import types

    import numpy as np
    from vtkmodules.vtkCommonCore import vtkFloatArray

    stand_in = types.ModuleType("vtkmodules.util.dlpack_support")
    stand_in.level_zero_handles = lambda: dict(HANDLES)
    monkeypatch.setitem(sys.modules, "vtkmodules.util.dlpack_support", stand_in)
    source = vtkFloatArray()
    source.SetNumberOfTuples(4)
    source.Fill(2.0)
    a = tv.vtk_to_array(source)
    np.testing.assert_array_equal(a.numpy(), np.full(4, 2.0, np.float32))
    back = tv.array_to_vtk(a)
    assert back.GetValue(3) == 2.0
    assert tv._vtk_level_zero_handles() == HANDLES


def test_without_vtk_the_exchange_is_a_runtime_error(tmp_path):
    """With vtkmodules unimportable, array_to_vtk reports a missing VTK as
    RuntimeError (after checking the layout)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "no_vtk.py"
    script.write_text(
        "import sys\n"
        "sys.modules['vtkmodules'] = None\n"
        "import tack\n"
        "from tack.interop.vtk import array_to_vtk\n"
        "try:\n"
        "    array_to_vtk(tack.zeros((2, 2, 2)))\n"
        "except ValueError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('layout not checked first')\n"
        "try:\n"
        "    array_to_vtk(tack.zeros(3))\n"
        "except RuntimeError as e:\n"
        "    assert isinstance(e, tack.TackError)\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, check=False, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "VTK is not installed" in out.stdout


def test_the_guard_reads_a_backends_own_context_handle(monkeypatch):
    """A backend object that carries its context handle (as the Level Zero backend
    keeps _context) is compared with VTK's context directly."""
    import types

    monkeypatch.setattr(tv, "_vtk_module", vtk_with(level_zero_handles=lambda: dict(HANDLES)))
    same = types.SimpleNamespace(name="level_zero", _context=HANDLES["context"])
    tv._require_shared_level_zero_context(same)
    other = types.SimpleNamespace(name="level_zero", _context=0x9999)
    with pytest.raises(RuntimeError, match="init_level_zero"):
        tv._require_shared_level_zero_context(other)
    cpu = types.SimpleNamespace(name="cpu", _context=0x9999)
    tv._require_shared_level_zero_context(cpu)
