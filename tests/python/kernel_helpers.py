"""Helpers for the kernel tests: run a kernel and its own Python function on the
same inputs and compare."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tack


def run_both(k: Any, *args: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Runs kernel k on Tack copies of args and its Python function on NumPy copies.
    Returns (kernel results, Python results): every array argument afterwards."""
    tack_args = [tack.array(a) if isinstance(a, np.ndarray) else a for a in args]
    np_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    k(*tack_args)
    k.__wrapped__(*np_args)
    got = [a.numpy() for a in tack_args if isinstance(a, tack.Array)]
    want = [a for a in np_args if isinstance(a, np.ndarray)]
    return got, want


def check_both(k: Any, *args: Any, exact: bool = True) -> None:
    got, want = run_both(k, *args)
    for g, w in zip(got, want, strict=False):
        assert g.dtype == w.dtype
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)


def read_only(n: int, dtype: Any) -> tack.Array:
    """A read-only Tack array of n zeros (a DLPack import of a read-only NumPy
    array)."""
    host = np.zeros(n, dtype=dtype)
    host.flags.writeable = False
    ro = tack.from_dlpack(host)
    assert not ro.writable
    return ro


@pytest.fixture(autouse=True)
def private_kernel_cache(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel cache of the test session's own (autouse where imported)."""
    monkeypatch.setenv("TACK_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kc"))
