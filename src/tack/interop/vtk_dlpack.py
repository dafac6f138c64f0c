"""VTK's DLPack functions, for VTK builds that lack ``vtkmodules.util.dlpack_support``.

No released VTK has that module: the PyPI wheel 9.7.1 does not. This module provides
its four public functions -- ``vtk_to_dlpack``, ``dlpack_to_vtk``, ``DLPackArray`` and
``supported_device_types`` -- with the same meaning for host memory, so that NumPy,
PyTorch or JAX exchange with VTK without copies through Tack. It builds on Tack's C
arrays instead of ctypes structs, so reference counting and deleters stay in C:

- VTK -> DLPack: the VTK array is wrapped as a Tack array over its own memory with
  ``tack.array_from_ptr(vtk_array, ...)``. Tack holds a ``Py_buffer`` on the VTK array
  for as long as any array over that memory lives, which keeps the VTK array alive; the
  capsule returned is that Tack array's ``__dlpack__``.
- DLPack -> VTK: the tensor is imported with ``tack.from_dlpack`` (the Tack array holds
  the producer's managed tensor and calls its deleter once), and a new VTK array is
  pointed at the memory with ``SetVoidArray(..., save=1)``, so VTK never frees it. The
  Tack array is the keep-alive: it is stored as an attribute on the VTK array's wrapper
  and, on VTK 9.7 and later, on the array's ``vtkBuffer``, which is what VTK shallow
  copies share (``point_data[name] = array`` inserts such a copy). VTK keeps the
  attributes of a wrapper whose C++ object is still alive and drops them when the
  object is deleted, so the tensor is released when the last VTK array over it goes.

Differences from VTK's module, on purpose: device memory needs VTK's own module (a VTK
built with Viskores), so a device tensor is refused with RuntimeError, never copied;
``device_id`` must be 0 because host memory has no other ordinal; kDLMetal tensors are
refused as Tack refuses them everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tack
from tack._tack import kDLCPU, kDLCUDAHost, kDLROCMHost

if TYPE_CHECKING:
    from vtkmodules.vtkCommonCore import vtkDataArray

__all__ = ["DLPackArray", "dlpack_to_vtk", "supported_device_types", "vtk_to_dlpack"]


# vtkType.h codes (stable across VTK 9.x).
VTK_BIT = 1
VTK_CHAR = 2
VTK_UNSIGNED_CHAR = 3
VTK_SHORT = 4
VTK_UNSIGNED_SHORT = 5
VTK_INT = 6
VTK_UNSIGNED_INT = 7
VTK_LONG = 8
VTK_UNSIGNED_LONG = 9
VTK_FLOAT = 10
VTK_DOUBLE = 11
VTK_ID_TYPE = 12
VTK_SIGNED_CHAR = 15
VTK_LONG_LONG = 16
VTK_UNSIGNED_LONG_LONG = 17

# Integer codes are mapped by their size, never by name: VTK_LONG is 4 bytes on
# Windows and 8 on LP64, VTK_ID_TYPE follows VTK_USE_64BIT_IDS.
_SIGNED = frozenset(
    {
        VTK_CHAR,
        VTK_SIGNED_CHAR,
        VTK_SHORT,
        VTK_INT,
        VTK_LONG,
        VTK_ID_TYPE,
        VTK_LONG_LONG,
    }
)
_UNSIGNED = frozenset(
    {
        VTK_UNSIGNED_CHAR,
        VTK_UNSIGNED_SHORT,
        VTK_UNSIGNED_INT,
        VTK_UNSIGNED_LONG,
        VTK_UNSIGNED_LONG_LONG,
    }
)

# Export: int64 goes out as VTK_LONG_LONG (vtkTypeInt64Array), which means 64 bits
# on every platform; VTK_CHAR is left out because C char may be unsigned.
_TACK_TO_VTK = {
    "int8": VTK_SIGNED_CHAR,
    "uint8": VTK_UNSIGNED_CHAR,
    "int16": VTK_SHORT,
    "uint16": VTK_UNSIGNED_SHORT,
    "int32": VTK_INT,
    "uint32": VTK_UNSIGNED_INT,
    "int64": VTK_LONG_LONG,
    "uint64": VTK_UNSIGNED_LONG_LONG,
    "float32": VTK_FLOAT,
    "float64": VTK_DOUBLE,
}

# The attribute holding the Tack array behind a VTK array made by this module.
KEEPALIVE_ATTR = "_tack_keepalive"


def supported_device_types() -> set[int]:
    """DLPack device types this module can import, as a set of ints: host memory only."""
    return {kDLCPU, kDLCUDAHost, kDLROCMHost}


def vtk_to_dlpack(array: vtkDataArray, device_id: int = 0, versioned: bool = False) -> Any:
    """Export a vtkDataArray as a DLPack capsule, without copying.

    The tensor is 2-D, (tuples, components), also for a single component. The VTK
    array stays alive for as long as the consumer holds the tensor. ``versioned=True``
    gives a DLPack 1.x ``dltensor_versioned`` capsule instead of the legacy one.

    Raises TypeError for a data type with no DLPack equivalent (bit arrays included),
    ValueError for an array with no single buffer (SOA, implicit), RuntimeError for
    device memory.
    """
    _require_host_ordinal(device_id)
    view = _wrap_vtk(array)
    return view.__dlpack__(max_version=(1, 0) if versioned else None)


class DLPackArray:
    """Exposes a vtkDataArray through the DLPack protocol, for ``xp.from_dlpack``.

    Each ``__dlpack__`` call wraps the array afresh, so a VTK array resized after this
    adapter was made is exported with its current memory.
    """

    def __init__(self, array: vtkDataArray, device_id: int = 0) -> None:
        _require_data_array(array)
        _require_host_ordinal(device_id)
        self.array = array
        self.device_id = device_id

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        # Host memory has no stream to order, so stream is accepted and unused, as
        # VTK's module does.
        del stream
        view = _wrap_vtk(self.array)
        return view.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (kDLCPU, self.device_id)


def dlpack_to_vtk(source: Any, name: str | None = None) -> vtkDataArray:
    """Import a DLPack tensor as a vtkDataArray, without copying.

    ``source`` is a capsule or an object with ``__dlpack__`` (a NumPy array, a PyTorch
    tensor, a JAX array, a Tack array). A 1-D tensor becomes a single-component array,
    a 2-D one (tuples, components); higher rank is ValueError. The tensor is held for
    as long as a VTK array over it lives, so ``source`` may be dropped at once. A
    read-only tensor is refused (tack.DLPackError, a ValueError and BufferError): a
    vtkDataArray has no read-only state. A device tensor is RuntimeError.
    """
    if not _is_capsule(source) and hasattr(source, "__dlpack_device__"):
        device_type = int(source.__dlpack_device__()[0])
        if device_type not in supported_device_types():
            raise tack.TackRuntimeError(
                f"cannot import a tensor on DLPack device type {device_type} into VTK: "
                "this VTK has no vtkmodules.util.dlpack_support, so only host memory "
                "can be shared; use a VTK built with Viskores, or copy the tensor to "
                "the host first"
            )
    array = tack.from_dlpack(source, device=tack.device("cpu"))
    if not array.writable:
        raise tack.DLPackError(
            "the tensor is read-only, and a vtkDataArray cannot be: VTK would be "
            "free to write to it; export a writable tensor or a copy"
        )
    result: vtkDataArray = _to_vtk(array, name)
    return result


# --- Shared with tack.interop.vtk ------------------------------------------------------


def _vtk_core() -> Any:
    """vtkmodules.vtkCommonCore, or RuntimeError saying VTK is not installed."""
    try:
        from vtkmodules import vtkCommonCore
    except ImportError as exc:
        raise tack.TackRuntimeError(
            "VTK is not installed in this environment: install the vtk package "
            "(pip install 'vtk>=9.7.1', or tack's 'interop' extra)"
        ) from exc
    return vtkCommonCore


def _require_data_array(obj: Any) -> None:
    core = _vtk_core()
    if isinstance(obj, core.vtkDataArray):
        return
    if isinstance(obj, core.vtkAbstractArray):
        raise tack.TackTypeError(
            f"expected a VTK data array (vtkDataArray), not {type(obj).__name__}: "
            "string, variant and other non-numeric arrays have no memory to share"
        )
    hint = (
        ": for another library's array use tack.array(x) (a copy) or "
        "tack.from_dlpack(x) (shares its memory)"
        if hasattr(obj, "__dlpack__") or hasattr(obj, "__array__")
        else ""
    )
    raise tack.TackTypeError(
        f"expected a VTK data array (vtkDataArray), not {type(obj).__name__}{hint}"
    )


def _refusal(vtk_array: Any, device_ok: bool = False) -> tuple[type[Exception], str] | None:
    """Why the array's memory cannot be shared as one buffer, or None.

    ``device_ok``: device memory is shareable (VTK's own DLPack module exports it).
    """
    if vtk_array.GetDataType() == VTK_BIT:
        return (
            tack.TackTypeError,
            "a bit array stores packed bits, which no dtype describes",
        )
    space = getattr(vtk_array, "GetMemorySpace", None)  # VTK 9.6 and later
    if not device_ok and space is not None and space() != 0:
        return (
            tack.TackRuntimeError,
            (
                "the array is in device memory, which needs a VTK with "
                "vtkmodules.util.dlpack_support built with Viskores"
            ),
        )
    if not vtk_array.HasStandardMemoryLayout():
        # SOA, implicit (affine, constant, structured point, ...) and mapped arrays.
        # VTK's buffer protocol would refuse them or, with Python 3.12, hand out a
        # private copy whose writes are lost: never let it get that far.
        return (
            tack.TackValueError,
            (
                f"{vtk_array.GetClassName()} has no single array-of-structures buffer "
                "(it is a struct-of-arrays or implicit array)"
            ),
        )
    return None


def _aos_copy(vtk_array: Any) -> Any:
    """A new host AOS array with the same values (bits become uint8)."""
    vtkDataArray = _vtk_core().vtkDataArray

    kind = vtk_array.GetDataType()
    out = vtkDataArray.CreateDataArray(VTK_UNSIGNED_CHAR if kind == VTK_BIT else kind)
    out.DeepCopy(vtk_array)
    return out


def _dtype_of(vtk_array: Any) -> Any:
    kind = vtk_array.GetDataType()
    bits = 8 * vtk_array.GetDataTypeSize()
    if kind in _SIGNED:
        return getattr(tack, f"int{bits}")
    if kind in _UNSIGNED:
        return getattr(tack, f"uint{bits}")
    if kind == VTK_FLOAT:
        return tack.float32
    if kind == VTK_DOUBLE:
        return tack.float64
    raise tack.TackTypeError(
        f"{vtk_array.GetClassName()} holds VTK type {vtk_array.GetDataTypeAsString()}, "
        "which has no Tack dtype"
    )


def _wrap_vtk(source: Any) -> Any:
    """A writable (tuples, components) Tack array over a VTK array's own memory.

    The Tack array holds a Py_buffer on the VTK array (in C), which keeps it alive.
    """
    _require_data_array(source)
    refusal = _refusal(source)
    if refusal is not None:
        kind, why = refusal
        raise kind(
            f"cannot share this VTK array's memory: {why}; "
            "tack.interop.vtk.vtk_to_array(..., copy=None) works on a copy"
        )
    dtype = _dtype_of(source)
    shape = (source.GetNumberOfTuples(), source.GetNumberOfComponents())
    if shape[0] * shape[1] == 0:
        # Nothing to share (VTK may not even have a pointer).
        return tack.empty(shape, dtype=dtype, device=tack.device("cpu"))
    return tack.array_from_ptr(source, shape, dtype, writable=True)


def _scalar_shape(array: Any) -> tuple[int, ...]:
    """The array's shape in scalars: a vecN element adds a trailing axis of N."""
    lanes = array.dtype.ncomponents
    return tuple(array.shape) + ((lanes,) if lanes > 1 else ())


def _void_pointer(address: int) -> str:
    # The form VTK's wrappers accept for a void* argument (vtkPythonUtil).
    return f"_{address:x}_p_void"


def _attach_keepalive(vtk_array: Any, keep: Any) -> None:
    """Keep ``keep`` alive for as long as the VTK array or its vtkBuffer lives.

    ``keep`` must not lead back to ``vtk_array``: a wrapper's attributes are invisible
    to Python's cycle collector, so such a cycle would never be freed.
    """
    setattr(vtk_array, KEEPALIVE_ATTR, keep)
    get_buffer = getattr(vtk_array, "GetBuffer", None)  # wrapped from VTK 9.7 on
    if get_buffer is not None:
        setattr(get_buffer(), KEEPALIVE_ATTR, keep)


def _to_vtk(array: Any, name: str | None) -> Any:
    """A new vtkDataArray over a host Tack array of 1 or 2 dimensions (in scalars).

    VTK never frees the memory (save=1) and the array is the keep-alive. The caller
    has checked that the array may be written.
    """
    vtkDataArray = _vtk_core().vtkDataArray

    shape = _scalar_shape(array)
    if len(shape) == 1:
        tuples, components = shape[0], 1
    elif len(shape) == 2:
        tuples, components = shape
    else:
        raise tack.TackValueError(
            f"a vtkDataArray is (tuples, components), so a tensor of shape {shape} "
            "does not fit; reshape it to 1 or 2 dimensions"
        )
    if components == 0:
        raise tack.TackValueError("a vtkDataArray needs at least one component")
    if array.device.name != "cpu":
        raise tack.TackRuntimeError(
            f"the array is on {array.device}; this VTK has no "
            "vtkmodules.util.dlpack_support, so only host memory can be shared"
        )
    scalar = "float32" if array.dtype.ncomponents > 1 else array.dtype.name
    vtk_type = _TACK_TO_VTK.get(scalar)
    if vtk_type is None:
        raise tack.TackTypeError(f"VTK has no array type for {scalar} elements")
    out = vtkDataArray.CreateDataArray(vtk_type)
    out.SetNumberOfComponents(components)
    if tuples:
        # save=1: VTK never frees this memory. If VTK later grows the array it
        # reallocates and copies, and from then on the two no longer share.
        out.SetVoidArray(_void_pointer(array.ptr), tuples * components, 1)
        _attach_keepalive(out, array)
    if name is not None:
        out.SetName(name)
    return out


def _require_host_ordinal(device_id: int) -> None:
    if device_id != 0:
        raise tack.TackValueError(
            f"device_id={device_id}: host memory is DLPack device (kDLCPU, 0); this "
            "module shares host memory only"
        )


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"
