"""Devices: names, ordinals, options, defaults, missing drivers."""

import pytest

import tack


def test_cpu_device_and_registry():
    d = tack.device("cpu")
    assert d.name == "cpu" and d.ordinal == 0
    assert d == tack.device("cpu", 0) == tack.device("cpu:0")
    assert hash(d) == hash(tack.device("cpu"))
    assert str(d) == "cpu:0" and "cpu" in repr(d)
    assert d.dlpack_device == (1, 0)


def test_default_device_round_trip():
    assert tack.get_default_device() == tack.device("cpu")
    dev = tack.set_default_device("cpu")
    assert dev == tack.get_default_device()
    assert tack.set_default_device(tack.device("cpu")) == tack.device("cpu")


def test_arrays_are_made_on_a_given_device():
    a = tack.zeros(2, device="cpu")
    b = tack.zeros(2, device=tack.device("cpu"))
    assert a.device == b.device


def test_unknown_devices_are_value_errors():
    with pytest.raises(ValueError):
        tack.device("tpu")
    with pytest.raises(ValueError):
        tack.device("cuda:x")
    with pytest.raises(ValueError):
        tack.device("cpu", 1)
    with pytest.raises(ValueError):
        tack.zeros(2, device="gpu")
    with pytest.raises(TypeError):
        tack.zeros(2, device=3)


def test_unknown_options_are_refused_before_construction():
    with pytest.raises(ValueError, match="external_context"):
        tack.device("cpu", external_context={"driver": 1, "device": 2, "context": 3})
    with pytest.raises(ValueError):
        tack.device("level_zero", externl_context={})
    with pytest.raises(ValueError):
        tack.set_default_device("cpu", nonsense=True)
    assert tack.get_default_device() == tack.device("cpu")


def test_external_context_requires_three_non_null_handles():
    with pytest.raises(ValueError, match="device, context"):
        tack.device("level_zero", external_context={"driver": 1})
    with pytest.raises(ValueError, match="driver"):
        tack.device("level_zero", external_context={"driver": 0, "device": 2, "context": 3})
    with pytest.raises(ValueError):
        tack.device("level_zero", external_context="not a dict")


@pytest.mark.parametrize(
    "name,library",
    [("cuda", "libcuda"), ("hip", "libamdhip64"), ("level_zero", "libze_loader")],
)
def test_missing_gpu_driver_names_its_library(name, library):
    try:
        tack.device(name)
    except tack.DeviceUnavailableError as e:
        assert isinstance(e, RuntimeError)
        assert library in str(e) or "driver is present" in str(e)
    else:  # pragma: no cover - only on a machine with that GPU stack
        pass


def test_metal_exists_only_on_macos():
    with pytest.raises(RuntimeError, match="macOS"):
        tack.device("metal")


def test_cuda_ordinal_parsing_matches_explicit_ordinal():
    errors = []
    for spec in (("cuda:1",), ("cuda", 1)):
        try:
            tack.device(*spec)
        except tack.DeviceUnavailableError as e:
            errors.append(str(e))
    assert len(errors) in (0, 2)
