"""tack.interop.vtk on the real VTK wheel: layouts, zero copy, lifetime, refusals."""

import gc
import sys
import weakref

import numpy as np
import pytest

import tack
from tack.interop import vtk as tv
from tack.interop import vtk_dlpack
from tack.interop.vtk import array_to_vtk, vtk_to_array

# VTK is optional: without it the module is skipped, never an error.
vcc = pytest.importorskip("vtkmodules.vtkCommonCore")
vtkImageData = pytest.importorskip("vtkmodules.vtkCommonDataModel").vtkImageData


def vtk_address(vtk_array) -> int:
    """The address of a VTK array's first value (VTK returns '_<hex>_p_void')."""
    return int(vtk_array.GetVoidPointer(0).split("_")[1], 16)


def filled(cls, tuples, components=1):
    """A VTK array (classic API) holding 0, 1, 2, ... in storage order."""
    out = cls()
    out.SetNumberOfComponents(components)
    out.SetNumberOfTuples(tuples)
    for i in range(tuples * components):
        out.SetComponent(i // components, i % components, float(i % 100))
    return out


def test_this_vtk_is_the_wheel_without_dlpack_support():
    # The fallback path below is the one every released VTK takes.
    assert vcc.vtkVersion.GetVTKVersion() == "9.7.1"
    assert tv._vtk_dlpack_support() is None


# --- VTK -> Tack -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, dtype",
    [
        (vcc.vtkFloatArray, tack.float32),
        (vcc.vtkDoubleArray, tack.float64),
        (vcc.vtkSignedCharArray, tack.int8),
        (vcc.vtkCharArray, tack.int8),
        (vcc.vtkUnsignedCharArray, tack.uint8),
        (vcc.vtkShortArray, tack.int16),
        (vcc.vtkUnsignedShortArray, tack.uint16),
        (vcc.vtkIntArray, tack.int32),
        (vcc.vtkUnsignedIntArray, tack.uint32),
        (vcc.vtkLongArray, tack.int64),
        (vcc.vtkUnsignedLongArray, tack.uint64),
        (vcc.vtkLongLongArray, tack.int64),
        (vcc.vtkUnsignedLongLongArray, tack.uint64),
        (vcc.vtkIdTypeArray, tack.int64),
    ],
)
def test_vtk_types_map_to_dtypes_and_share_memory(cls, dtype):
    source = filled(cls, 5, 2)
    values = vtk_to_array(source)
    assert values.dtype == dtype
    assert values.shape == (5, 2)
    assert values.ptr == vtk_address(source)
    np.testing.assert_array_equal(values.numpy().ravel(), np.arange(10))


def test_single_component_is_1d_and_flatten_is_interleaved():
    scalars = vcc.vtkFloatArray(number_of_tuples=6)  # the pythonic API
    scalars.Fill(2.0)
    assert vtk_to_array(scalars).shape == (6,)
    assert vtk_to_array(scalars, flatten=True).shape == (6,)
    points = filled(vcc.vtkFloatArray, 4, 3)
    assert vtk_to_array(points).shape == (4, 3)
    flat = vtk_to_array(points, flatten=True)
    assert flat.shape == (12,)
    np.testing.assert_array_equal(flat.numpy(), np.arange(12, dtype=np.float32))


def test_writes_cross_both_ways():
    source = vcc.vtkDoubleArray(number_of_components=3, number_of_tuples=4)
    source.Fill(1.0)
    values = vtk_to_array(source)
    assert values.writable
    values.fill(5.0)  # Tack -> VTK
    assert source.GetTuple3(2) == (5.0, 5.0, 5.0)
    source.SetComponent(1, 2, -3.0)  # VTK -> Tack
    assert values.numpy()[1, 2] == -3.0


def test_the_vtk_array_may_be_dropped_at_once():
    source = filled(vcc.vtkFloatArray, 1000)
    alive = weakref.ref(source)
    values = vtk_to_array(source)
    flat = values.reshape((10, 100))
    del source, values
    gc.collect()
    assert alive() is not None  # held by the views (Tack's Py_buffer on it)
    junk = [vcc.vtkFloatArray(number_of_tuples=1000) for _ in range(20)]  # reuse memory
    np.testing.assert_array_equal(flat.numpy().ravel(), np.arange(1000) % 100)
    del flat, junk
    gc.collect()
    assert alive() is None  # the last view released it: no cycle


def test_vtk_memory_is_still_valid_for_vtk_after_the_view_goes():
    source = filled(vcc.vtkIntArray, 8)
    values = vtk_to_array(source)
    values.fill(9)
    del values
    gc.collect()
    assert [source.GetValue(i) for i in range(8)] == [9] * 8


def test_empty_vtk_array():
    empty = vcc.vtkFloatArray(number_of_components=3)
    assert vtk_to_array(empty).shape == (0, 3)
    assert vtk_to_array(empty, flatten=True).shape == (0,)


def test_bit_arrays_are_refused_unless_a_copy_is_allowed():
    bits = vcc.vtkBitArray(number_of_tuples=10)
    for i in range(10):
        bits.SetValue(i, i % 2)
    with pytest.raises(TypeError):
        vtk_to_array(bits)
    copied = vtk_to_array(bits, copy=None)
    assert copied.dtype == tack.uint8
    np.testing.assert_array_equal(copied.numpy(), np.arange(10) % 2)


def test_soa_arrays_are_refused_unless_a_copy_is_allowed():
    soa = vcc.vtkSOADataArrayTemplate["float32"]()
    soa.SetNumberOfComponents(2)
    soa.SetNumberOfTuples(3)
    for t in range(3):
        soa.SetTuple2(t, t, 10 + t)
    with pytest.raises(ValueError):
        vtk_to_array(soa)
    copied = vtk_to_array(soa, copy=None)
    np.testing.assert_array_equal(copied.numpy(), [[0, 10], [1, 11], [2, 12]])
    # The copy is private: writing it leaves the SOA array alone.
    copied.fill(0.0)
    assert soa.GetTuple2(1) == (1.0, 11.0)


def test_implicit_arrays_are_refused_unless_a_copy_is_allowed():
    image = vtkImageData(dimensions=(3, 2, 1), spacing=(0.5, 1.0, 1.0))
    coordinates = image.GetPoints().GetData()  # an implicit structured-point array
    assert not coordinates.HasStandardMemoryLayout()
    with pytest.raises(ValueError):
        vtk_to_array(coordinates)
    copied = vtk_to_array(coordinates, copy=None)
    assert copied.shape == (6, 3)
    np.testing.assert_array_equal(copied.numpy()[:3, 0], [0.0, 0.5, 1.0])


def test_copy_true_always_copies_and_none_only_when_needed():
    source = filled(vcc.vtkFloatArray, 4)
    copied = vtk_to_array(source, copy=True)
    assert copied.ptr != vtk_address(source)
    np.testing.assert_array_equal(copied.numpy(), np.arange(4))
    assert vtk_to_array(source, copy=None).ptr == vtk_address(source)
    values = tack.array(np.arange(4, dtype=np.float32))
    assert vtk_address(array_to_vtk(values, copy=True)) != values.ptr
    assert vtk_address(array_to_vtk(values, copy=None)) == values.ptr


def test_non_numeric_arrays_are_type_errors():
    with pytest.raises(TypeError):
        vtk_to_array(vcc.vtkStringArray())
    with pytest.raises(TypeError):
        vtk_to_array(np.zeros(3))


# --- Tack -> VTK -----------------------------------------------------------------------


def test_array_to_vtk_shares_memory_and_names_the_array():
    values = tack.array(np.arange(12, dtype=np.float32))
    exported = array_to_vtk(values, n_components=3, name="points")
    assert exported.GetName() == "points"
    assert exported.GetNumberOfTuples() == 4
    assert exported.GetNumberOfComponents() == 3
    assert vtk_address(exported) == values.ptr
    assert exported.GetTuple3(1) == (3.0, 4.0, 5.0)
    values.fill(1.5)
    assert exported.GetTuple3(3) == (1.5, 1.5, 1.5)
    exported.SetComponent(0, 0, 8.0)
    assert values.numpy()[0] == 8.0


@pytest.mark.parametrize(
    "dtype, vtk_class",
    [
        (tack.int8, "vtkTypeInt8Array"),
        (tack.uint8, "vtkTypeUInt8Array"),
        (tack.int16, "vtkTypeInt16Array"),
        (tack.uint16, "vtkTypeUInt16Array"),
        (tack.int32, "vtkTypeInt32Array"),
        (tack.uint32, "vtkTypeUInt32Array"),
        (tack.int64, "vtkTypeInt64Array"),
        (tack.uint64, "vtkTypeUInt64Array"),
        (tack.float32, "vtkTypeFloat32Array"),
        (tack.float64, "vtkTypeFloat64Array"),
    ],
)
def test_dtypes_map_to_vtk_arrays(dtype, vtk_class):
    values = tack.array(np.arange(6), dtype=dtype).reshape((3, 2))
    exported = array_to_vtk(values)
    assert exported.GetClassName() == vtk_class
    assert exported.GetNumberOfComponents() == 2
    np.testing.assert_array_equal(np.asarray(exported), np.arange(6).reshape(3, 2))
    round_trip = vtk_to_array(exported)
    assert round_trip.dtype == dtype and round_trip.ptr == values.ptr


@pytest.mark.parametrize("dtype", [tack.bool, tack.float16])
def test_dtypes_vtk_cannot_hold(dtype):
    with pytest.raises(TypeError):
        array_to_vtk(tack.zeros(4, dtype=dtype))


def test_vec3_elements_need_no_count():
    points = tack.zeros(5, dtype=tack.vec3)
    points.fill((1.0, 2.0, 3.0))
    exported = array_to_vtk(points)
    assert exported.GetNumberOfComponents() == 3
    assert exported.GetNumberOfTuples() == 5
    assert exported.GetTuple3(4) == (1.0, 2.0, 3.0)
    assert array_to_vtk(points, n_components=3).GetNumberOfTuples() == 5
    grid = tack.zeros((2, 3), dtype=tack.vec3)
    assert array_to_vtk(grid, n_components=3).GetNumberOfTuples() == 6
    with pytest.raises(ValueError):
        array_to_vtk(points, n_components=1)


def test_three_dimensional_fields():
    volume = tack.zeros((5, 7, 9))
    scalars = array_to_vtk(volume, n_components=1)
    assert (scalars.GetNumberOfTuples(), scalars.GetNumberOfComponents()) == (315, 1)
    vectors = array_to_vtk(tack.zeros((4, 5, 3)), n_components=3)
    assert (vectors.GetNumberOfTuples(), vectors.GetNumberOfComponents()) == (20, 3)


@pytest.mark.parametrize(
    "shape, n_components",
    [
        ((10,), 3),  # does not divide
        ((4, 3), 2),  # contradicts (tuples, components)
        ((4, 3), 1),
        ((3, 4, 5), None),  # three dimensions need a count
        ((3, 4, 5), 4),  # not whole trailing axes
        ((3, 4, 5), 0),
        ((), None),
    ],
)
def test_layout_mistakes_are_reported_before_vtk_is_touched(monkeypatch, shape, n_components):
    def untouched(*args):
        raise AssertionError("VTK was touched")

    monkeypatch.setattr(vtk_dlpack, "_to_vtk", untouched)
    with pytest.raises(ValueError):
        array_to_vtk(tack.zeros(shape), n_components=n_components)


def test_n_components_must_be_an_int():
    with pytest.raises(TypeError):
        array_to_vtk(tack.zeros(6), n_components=1.5)
    with pytest.raises(TypeError):
        array_to_vtk(tack.zeros(6), n_components=True)


def test_only_tack_arrays_are_accepted():
    with pytest.raises(TypeError):
        array_to_vtk(np.zeros(4, dtype=np.float32))


def test_read_only_arrays_are_not_handed_to_vtk_as_writable():
    host = np.arange(6, dtype=np.float32)
    read_only = tack.array_from_ptr(host, (6,), tack.f32, writable=False)
    with pytest.raises(ValueError):
        array_to_vtk(read_only)
    copied = array_to_vtk(read_only, copy=None)  # a private copy, when asked
    assert vtk_address(copied) != host.ctypes.data
    np.testing.assert_array_equal(np.asarray(copied), host)
    copied.SetValue(0, 99.0)
    assert host[0] == 0.0


def test_the_tack_array_may_be_dropped_after_export():
    values = tack.array(np.arange(1000, dtype=np.float64))
    before = sys.getrefcount(values)
    exported = array_to_vtk(values)
    assert sys.getrefcount(values) > before  # held by the VTK array and its buffer
    address = values.ptr
    del values
    gc.collect()
    junk = [tack.zeros(1000, dtype=tack.f64) for _ in range(20)]  # reuse freed memory
    assert vtk_address(exported) == address
    np.testing.assert_array_equal(np.asarray(exported), np.arange(1000))
    del junk


def test_the_hold_is_released_with_the_vtk_array():
    values = tack.array(np.arange(8, dtype=np.float32))
    before = sys.getrefcount(values)
    exported = array_to_vtk(values)
    del exported
    gc.collect()
    assert sys.getrefcount(values) == before


def test_a_foreign_producer_is_released_when_vtk_lets_go():
    host = np.arange(10, dtype=np.float32)
    alive = weakref.ref(host)
    values = tack.from_dlpack(host)
    del host
    exported = array_to_vtk(values)
    del values
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(np.asarray(exported), np.arange(10))
    del exported
    gc.collect()
    assert alive() is None


def test_memory_survives_vtk_shallow_copies():
    # point_data[name] = array inserts a VTK ShallowCopy that shares only the
    # vtkBuffer; the hold on the buffer keeps Tack's memory alive for it.
    host = np.arange(6, dtype=np.float32)
    alive = weakref.ref(host)
    image = vtkImageData(dimensions=(3, 2, 1))
    exported = array_to_vtk(tack.from_dlpack(host))
    del host
    image.point_data["r"] = exported
    assert image.point_data["r"] is not exported
    del exported
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(np.asarray(image.point_data["r"]), np.arange(6))
    image.GetPointData().RemoveArray("r")
    gc.collect()
    assert alive() is None


def test_memory_survives_through_classic_set_scalars():
    image = vtkImageData()
    image.SetDimensions(2, 2, 2)
    values = tack.array(np.arange(8, dtype=np.float64))
    image.GetPointData().SetScalars(array_to_vtk(values, name="v"))
    del values
    gc.collect()
    scalars = image.GetPointData().GetScalars()
    assert scalars.GetName() == "v"
    assert [scalars.GetValue(i) for i in range(8)] == list(range(8))


def test_round_trip_has_no_reference_cycle():
    source = filled(vcc.vtkFloatArray, 6)
    alive = weakref.ref(source)
    exported = array_to_vtk(vtk_to_array(source))
    assert vtk_address(exported) == vtk_address(source)
    del source
    gc.collect()
    assert alive() is not None
    del exported
    gc.collect()
    assert alive() is None


def test_empty_tack_array():
    exported = array_to_vtk(tack.zeros((0, 3)))
    assert (exported.GetNumberOfTuples(), exported.GetNumberOfComponents()) == (0, 3)


def test_pyvista_sees_exported_arrays_without_a_copy():
    import pyvista as pv

    values = tack.array(np.arange(12, dtype=np.float32))
    wrapped = pv.wrap(array_to_vtk(values, n_components=3))
    assert wrapped.shape == (4, 3)
    assert wrapped.__array_interface__["data"][0] == values.ptr
    image = vtkImageData(dimensions=(3, 2, 2))
    image.point_data.SetScalars(array_to_vtk(values, name="r"))
    grid = pv.wrap(image)
    assert grid.point_data["r"].__array_interface__["data"][0] == values.ptr
    values.fill(4.0)
    assert float(grid.point_data["r"][5]) == 4.0
