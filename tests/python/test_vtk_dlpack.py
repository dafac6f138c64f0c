"""tack.interop.vtk_dlpack: VTK's DLPack functions for a VTK without them, with real peers."""

import gc
import weakref

import numpy as np
import pytest

import tack
from tack.interop.vtk_dlpack import (
    DLPackArray,
    dlpack_to_vtk,
    supported_device_types,
    vtk_to_dlpack,
)

# Optional peers: without them the module is skipped, never an error.
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
vcc = pytest.importorskip("vtkmodules.vtkCommonCore")


def vtk_address(vtk_array) -> int:
    return int(vtk_array.GetVoidPointer(0).split("_")[1], 16)


def counting(tuples, components=1):
    out = vcc.vtkDoubleArray(number_of_components=components, number_of_tuples=tuples)
    for i in range(tuples * components):
        out.SetValue(i, float(i))
    return out


def test_supported_device_types_are_host_memory():
    assert supported_device_types() == {1, 3, 11}  # kDLCPU, kDLCUDAHost, kDLROCMHost


# --- vtk_to_dlpack -----------------------------------------------------------------------


def test_vtk_to_dlpack_gives_a_legacy_capsule_by_default():
    capsule = vtk_to_dlpack(counting(3))
    assert 'capsule object "dltensor"' in repr(capsule)
    versioned = vtk_to_dlpack(counting(3), versioned=True)
    assert 'capsule object "dltensor_versioned"' in repr(versioned)


def test_vtk_to_dlpack_is_two_dimensional_and_zero_copy():
    source = counting(4)
    imported = tack.from_dlpack(vtk_to_dlpack(source))
    assert imported.shape == (4, 1)  # single components keep their trailing 1
    assert imported.ptr == vtk_address(source)
    points = counting(4, 3)
    imported = tack.from_dlpack(vtk_to_dlpack(points, versioned=True))
    assert imported.shape == (4, 3) and imported.writable
    np.testing.assert_array_equal(imported.numpy().ravel(), np.arange(12))


def test_an_unconsumed_capsule_releases_the_vtk_array():
    source = counting(4)
    alive = weakref.ref(source)
    capsule = vtk_to_dlpack(source)
    del source
    gc.collect()
    assert alive() is not None
    del capsule
    gc.collect()
    assert alive() is None


def test_vtk_to_dlpack_refusals():
    with pytest.raises(TypeError):
        vtk_to_dlpack(vcc.vtkBitArray(number_of_tuples=8))
    soa = vcc.vtkSOADataArrayTemplate["float64"]()
    soa.SetNumberOfComponents(2)
    soa.SetNumberOfTuples(2)
    with pytest.raises(ValueError):
        vtk_to_dlpack(soa)
    with pytest.raises(TypeError):
        vtk_to_dlpack(vcc.vtkStringArray())
    with pytest.raises(ValueError):
        vtk_to_dlpack(counting(2), device_id=1)


# --- DLPackArray ---------------------------------------------------------------------------


def test_numpy_shares_a_vtk_array_through_dlpackarray():
    source = counting(5, 2)
    alive = weakref.ref(source)
    view = np.from_dlpack(DLPackArray(source))
    assert view.shape == (5, 2)
    assert view.ctypes.data == vtk_address(source)
    view[1, 1] = -7.0
    assert source.GetComponent(1, 1) == -7.0
    del source
    gc.collect()
    assert alive() is not None  # NumPy's view holds the VTK array
    np.testing.assert_array_equal(view.ravel()[:3], [0.0, 1.0, 2.0])
    del view
    gc.collect()
    assert alive() is None


def test_dlpackarray_device_and_arguments():
    adapter = DLPackArray(counting(2))
    assert adapter.__dlpack_device__() == (1, 0)
    assert "dltensor_versioned" in repr(adapter.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(adapter.__dlpack__(stream=None))
    with pytest.raises(TypeError):
        DLPackArray(vcc.vtkStringArray())


def test_jax_reads_a_vtk_array():
    source = counting(3, 3)
    shared = jnp.from_dlpack(DLPackArray(source))
    np.testing.assert_array_equal(np.asarray(shared), np.arange(9.0).reshape(3, 3))
    assert shared.devices() == {jax.devices("cpu")[0]}


# --- dlpack_to_vtk --------------------------------------------------------------------------


def test_numpy_to_vtk_without_a_copy():
    host = np.arange(12, dtype=np.float32).reshape(4, 3)
    exported = dlpack_to_vtk(host, name="points")
    assert exported.GetName() == "points"
    assert (exported.GetNumberOfTuples(), exported.GetNumberOfComponents()) == (4, 3)
    assert vtk_address(exported) == host.ctypes.data
    exported.SetComponent(2, 0, -1.0)
    assert host[2, 0] == -1.0
    scalars = dlpack_to_vtk(np.arange(5.0))
    assert scalars.GetNumberOfComponents() == 1 and scalars.GetNumberOfTuples() == 5


def test_the_producer_lives_as_long_as_the_vtk_array():
    host = np.arange(100, dtype=np.int32)
    alive = weakref.ref(host)
    exported = dlpack_to_vtk(host)
    del host
    gc.collect()
    assert alive() is not None
    assert exported.GetValue(99) == 99
    del exported
    gc.collect()
    assert alive() is None


def test_a_capsule_is_accepted():
    host = np.arange(6, dtype=np.float64)
    exported = dlpack_to_vtk(host.__dlpack__())
    assert vtk_address(exported) == host.ctypes.data


def test_jax_to_vtk_is_a_copy():
    # JAX arrays are immutable, so Tack imports them read-only, and VTK arrays are
    # always writable: the JAX array itself is refused, a NumPy copy of it is not.
    values = jnp.arange(6.0, dtype=jnp.float32)
    with pytest.raises(tack.DLPackError, match="read-only"):
        dlpack_to_vtk(values)
    exported = dlpack_to_vtk(np.array(values))
    assert exported.GetDataType() == 10  # VTK_FLOAT
    np.testing.assert_array_equal(np.asarray(exported), np.arange(6.0))


def test_a_tack_array_to_vtk():
    values = tack.array(np.arange(6, dtype=np.int64)).reshape((2, 3))
    exported = dlpack_to_vtk(values)
    assert vtk_address(exported) == values.ptr
    assert exported.GetClassName() == "vtkTypeInt64Array"


def test_read_only_tensors_are_refused():
    host = np.arange(4, dtype=np.float32)
    host.flags.writeable = False
    with pytest.raises(tack.DLPackError) as caught:
        dlpack_to_vtk(host)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, BufferError)


def test_higher_rank_is_refused():
    with pytest.raises(ValueError):
        dlpack_to_vtk(np.zeros((2, 2, 2)))


def test_unsupported_dtypes_are_refused():
    with pytest.raises(TypeError):
        dlpack_to_vtk(np.zeros(3, dtype=np.float16))


class _DeviceTensor:
    """Says it lives on a CUDA device; must be refused before __dlpack__ is called."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise AssertionError("a device tensor was consumed")


def test_device_tensors_are_refused_without_viskores():
    with pytest.raises(RuntimeError):
        dlpack_to_vtk(_DeviceTensor())
