"""Shared fixtures: every test starts on the CPU device; cp is the counting DLPack
producer (tests/python/producer)."""

import os

import pytest

import tack


@pytest.fixture(scope="session")
def cp():
    import producer

    return producer.load()


@pytest.fixture(autouse=True)
def _cpu_default_device():
    tack.set_default_device("cpu")
    yield
    tack.set_default_device("cpu")


def _cuda_unavailable() -> str | None:
    """Why tack.device("cuda") cannot be opened, or None when it can."""
    try:
        tack.device("cuda")
    except tack.TackError as e:
        return str(e)
    return None


def _long(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in ("slow", "long"))


def pytest_collection_modifyitems(config, items):
    # The tests that take a minute or more first, in a stable order that every
    # pytest-xdist worker computes alike: the scheduler hands tests out in this order,
    # so no worker is left to end the run alone on a long one while the others idle.
    items.sort(key=lambda item: not _long(item))
    cuda_items = [item for item in items if "cuda" in item.keywords]
    if not cuda_items:
        return
    why = _cuda_unavailable()
    if why is None:
        return
    # On a GPU machine (scripts/gpu_check.sh sets TACK_REQUIRE_CUDA=1) a CUDA test must
    # run or fail, never skip: a check that skipped everything would read as a pass.
    if os.environ.get("TACK_REQUIRE_CUDA") == "1":
        raise pytest.UsageError(
            f"TACK_REQUIRE_CUDA=1 but tack.device('cuda') cannot be opened: {why}"
        )
    skip = pytest.mark.skip(reason=f"no CUDA device ({why})")
    for item in cuda_items:
        item.add_marker(skip)
