"""Zero-copy exchange between Tack arrays and VTK data arrays.

``vtk_to_array`` gives a Tack array over a vtkDataArray's memory, ``array_to_vtk`` a new
vtkDataArray over a Tack array's memory; neither copies. Where VTK has
``vtkmodules.util.dlpack_support`` (device arrays through Viskores) both go through it;
where it does not -- every released VTK, the 9.7.1
wheel included -- Tack's own implementation of that module for host memory,
``tack.interop.vtk_dlpack``, does the same job. docs/vtk.md has the lifetime rules.

Level Zero pointers are meaningful only in the context that allocated them, which
DLPack cannot carry, so on Level Zero both functions first check that Tack runs in
VTK's context (``init_level_zero()``).
"""

from __future__ import annotations

import importlib
import operator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import tack
from tack.interop import vtk_dlpack

if TYPE_CHECKING:
    from vtkmodules.vtkCommonCore import vtkDataArray

__all__ = ["array_to_vtk", "init_level_zero", "vtk_to_array"]

# Handles adopted by init_level_zero(), by device. A tack.Device reports its own
# (Device.external_context, from the runtime), which the guard reads first; this
# record serves objects that do not.
_adopted_handles: dict[Any, dict[str, int]] = {}


def vtk_to_array(
    vtk_array: vtkDataArray, flatten: bool = False, *, copy: bool | None = False
) -> tack.Array:
    """A Tack array over a vtkDataArray's memory, without copying.

    VTK arrays are (tuples, components): the result has that shape, except that a
    single-component array comes back 1-D and ``flatten=True`` gives the flat
    interleaved (tuples * components,) layout. The result keeps the VTK array alive,
    so the caller may drop it at once; writes through either side show in the other.

    Bit, struct-of-arrays and implicit arrays have no single buffer to share, and
    without VTK's DLPack module device arrays cannot be shared either: they raise
    (TypeError, ValueError, RuntimeError respectively) unless ``copy=None`` (copy
    only what cannot be shared) or ``copy=True`` (always work on a copy).
    """
    vtk_dlpack._require_data_array(vtk_array)
    support = _vtk_dlpack_support()
    source = vtk_array
    if copy is True or (
        copy is None and vtk_dlpack._refusal(vtk_array, device_ok=support is not None) is not None
    ):
        source = vtk_dlpack._aos_copy(vtk_array)
    if support is not None:
        array = tack.from_dlpack(support.vtk_to_dlpack(source))
    else:
        array = vtk_dlpack._wrap_vtk(source)
    _require_shared_level_zero_context(array.device)
    tuples, components = array.shape
    if flatten:
        return array.reshape((tuples * components,))
    if components == 1:
        return array.reshape((tuples,))
    return array


def array_to_vtk(
    array: tack.Array,
    n_components: int | None = None,
    name: str | None = None,
    *,
    copy: bool | None = False,
) -> vtkDataArray:
    """A new vtkDataArray over a Tack array's memory, without copying.

    The layout is worked out before VTK is touched: a 1-D array is split into tuples
    of ``n_components`` values (default 1), a 2-D array is (tuples, components), an
    array of vecN elements has N components per element, and an array of three or
    more dimensions needs ``n_components``, which must span whole trailing axes (1 for
    a scalar field). A contradictory or non-dividing ``n_components`` is ValueError.
    ``name`` names the VTK array.

    VTK never frees Tack's memory, and the Tack array may be dropped: the VTK array
    (and any VTK shallow copy of it) keeps it alive. A read-only array is refused with
    ValueError, since VTK could write to it, unless ``copy=None`` or ``copy=True``
    allow exporting a private copy.
    """
    if not isinstance(array, tack.Array):
        raise tack.TackTypeError(
            f"expected a tack.Array, not {type(array).__name__}; for another library's "
            "tensor use tack.interop.vtk_dlpack.dlpack_to_vtk or tack.from_dlpack"
        )
    tuples, components = _vtk_layout(
        vtk_dlpack._scalar_shape(array), array.dtype.ncomponents, n_components
    )
    _require_shared_level_zero_context(array.device)
    if copy is True or (copy is None and not array.writable):
        array = _private_copy(array)
    elif not array.writable:
        raise tack.TackValueError(
            "the array is read-only, and VTK arrays are always writable; pass "
            "copy=None to export a private copy"
        )
    lanes = array.dtype.ncomponents
    shape = (tuples,) if components == lanes else (tuples, components // lanes)
    if tuple(array.shape) != shape:
        array = array.reshape(shape)
    support = _vtk_dlpack_support()
    if support is not None:
        result: vtkDataArray = support.dlpack_to_vtk(array, name=name)
    else:
        result = vtk_dlpack._to_vtk(array, name)
    return result


def _vtk_layout(shape: tuple[int, ...], lanes: int, n_components: int | None) -> tuple[int, int]:
    """(tuples, components) for an array of ``shape`` scalars, or ValueError.

    ``lanes`` is the vector width of the element type (1 for scalars); the components
    of a tuple must be whole elements.
    """
    if n_components is not None:
        if isinstance(n_components, bool):
            raise tack.TackTypeError("n_components must be an int, not bool")
        n_components = operator.index(n_components)
        if n_components < 1:
            raise tack.TackValueError(f"n_components={n_components}: need 1 or more")
    ndim = len(shape)
    if ndim == 0:
        raise tack.TackValueError("a 0-d array has no tuples; reshape it to (1,)")
    if ndim == 1:
        count = 1 if n_components is None else n_components
        if shape[0] % count:
            raise tack.TackValueError(
                f"n_components={count} does not divide the {shape[0]} values of a 1-D "
                "array into whole tuples"
            )
        tuples, components = shape[0] // count, count
    elif ndim == 2:
        if n_components not in (None, shape[1]):
            raise tack.TackValueError(
                f"n_components={n_components} contradicts the array's layout: shape "
                f"{shape} is {shape[0]} tuples of {shape[1]} components"
            )
        tuples, components = shape
    else:
        if n_components is None:
            raise tack.TackValueError(
                f"an array of shape {shape} has {ndim} dimensions: give n_components "
                "(1 for a scalar field, the last axis for a vector field)"
            )
        spans = [1]
        for extent in reversed(shape[1:]):
            spans.append(spans[-1] * extent)
        if n_components not in spans:
            raise tack.TackValueError(
                f"n_components={n_components} contradicts shape {shape}: components "
                f"must span whole trailing axes, one of {sorted(set(spans))}"
            )
        components = n_components
        tuples = spans[-1] * shape[0] // components
    if components % lanes:
        raise tack.TackValueError(
            f"each element holds {lanes} values, so a tuple of {components} components "
            "would split one; use a multiple of the element width"
        )
    return tuples, components


def _private_copy(array: Any) -> Any:
    out = tack.empty(array.shape, dtype=array.dtype, device=array.device)
    tack.copyto(out, array)
    return out


# --- Level Zero ------------------------------------------------------------------------


def _vtk_module() -> ModuleType | None:
    """VTK's ``vtkmodules.util.dlpack_support`` as it is, or None where it is absent."""
    try:
        # Imported by name: VTK builds without the module (9.7 wheels) have no stub
        # for it either.
        return importlib.import_module("vtkmodules.util.dlpack_support")
    except ImportError:
        return None


def _vtk_dlpack_support() -> ModuleType | None:
    """VTK's DLPack module when it can exchange arrays (it has both ``vtk_to_dlpack``
    and ``dlpack_to_vtk``), else None: Tack's own host implementation is used then. A
    module that only reports Level Zero handles does not replace the exchange."""
    module = _vtk_module()
    if module is None:
        return None
    if not (callable(getattr(module, "vtk_to_dlpack", None))
            and callable(getattr(module, "dlpack_to_vtk", None))):
        return None
    return module


def _vtk_level_zero_handles() -> dict[str, int]:
    """VTK's Level Zero driver, device and context handles, or RuntimeError."""
    support = _vtk_module()
    if support is None:
        raise tack.TackRuntimeError(
            "this VTK has no vtkmodules.util.dlpack_support, so it cannot report the "
            "Level Zero context its arrays live in; use a VTK built with Viskores on "
            "Kokkos' SYCL backend"
        )
    handles_fn = getattr(support, "level_zero_handles", None)
    if handles_fn is None:
        raise tack.TackRuntimeError(
            "this VTK's dlpack_support has no level_zero_handles(): the VTK is too old "
            "to share its Level Zero context"
        )
    handles = handles_fn()
    if not handles:
        raise tack.TackRuntimeError(
            "VTK reports no Level Zero context: it was built without Viskores on "
            "Kokkos' SYCL backend, or it is not running on a Level Zero device"
        )
    return {key: int(handles[key]) for key in ("driver", "device", "context")}


def init_level_zero() -> tack.Device:
    """Make Tack's default device Level Zero in VTK's own context, and return it.

    Arrays allocated afterwards live in the context VTK's Viskores device uses, so
    they can be exchanged with VTK. RuntimeError when VTK has no handles to give.
    """
    handles = _vtk_level_zero_handles()
    device = tack.set_default_device("level_zero", external_context=handles)
    _adopted_handles[device] = handles
    return device


def _adopted_context(device: Any) -> int | None:
    """The context handle the device allocates in, where it can be known: reported
    by the device (an ``external_context`` dict, or a backend's ``_context`` handle)
    or recorded by init_level_zero()."""
    reported = getattr(device, "external_context", None)
    if isinstance(reported, dict) and reported.get("context"):
        return int(reported["context"])
    context = getattr(device, "_context", None)
    if context is not None:
        return int(getattr(context, "value", context) or 0) or None
    try:
        handles = _adopted_handles.get(device)
    except TypeError:  # an unhashable stand-in
        handles = None
    return None if handles is None else handles["context"]


def _require_shared_level_zero_context(device: Any) -> None:
    """On Level Zero, RuntimeError unless ``device`` runs in VTK's context.

    A USM pointer means something only in the context that allocated it, DLPack has
    no field for a context, and the driver accepts a foreign pointer anyway: only Tack
    knows where it allocated, so the check lives here. Other backends pass.
    """
    # A tack.Device, or a backend object that names itself (name or backend).
    name = getattr(device, "name", None) or getattr(device, "backend", None)
    if name != "level_zero":
        return
    fix = (
        "start Tack with tack.interop.vtk.init_level_zero() instead of "
        "tack.set_default_device('level_zero'), and allocate arrays after it"
    )
    try:
        handles = _vtk_level_zero_handles()
    except RuntimeError as exc:
        raise tack.TackRuntimeError(
            f"cannot exchange Level Zero memory with VTK: {exc}; {fix}"
        ) from exc
    adopted = None
    if getattr(device, "shares_external_context", True):
        adopted = _adopted_context(device)
    if adopted != handles["context"]:
        raise tack.TackRuntimeError(
            "this array's Level Zero context is not VTK's, and a pointer is valid only "
            f"in the context that allocated it: {fix}"
        )
