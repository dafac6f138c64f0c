"""Shared fixtures: every test starts on the CPU device."""

import pytest

import tack


@pytest.fixture(autouse=True)
def _cpu_default_device():
    tack.set_default_device("cpu")
    yield
    tack.set_default_device("cpu")


def _has_cuda() -> bool:
    try:
        tack.device("cuda")
    except tack.TackError:
        return False
    return True


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
