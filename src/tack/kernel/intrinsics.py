"""The names kernels use from tack beyond dtypes: atomics and local arrays.

Inside a kernel the compiler replaces each call (see builtins.py). Called from plain
Python (a kernel's ``__wrapped__`` run on NumPy arrays, as the tests do) they do
the same thing serially, so a kernel's Python function stays runnable Python.
"""

from __future__ import annotations

from typing import Any


def _key(idx: tuple[Any, ...]) -> Any:
    return idx[0] if len(idx) == 1 else idx


def atomic_add(a: Any, *index_and_value: Any) -> Any:
    """a[i, ...] += v as one atomic operation; returns the old value."""
    *idx, v = index_and_value
    old = a[_key(tuple(idx))]
    a[_key(tuple(idx))] = old + v
    return old


def atomic_sub(a: Any, *index_and_value: Any) -> Any:
    """a[i, ...] -= v as one atomic operation; returns the old value."""
    *idx, v = index_and_value
    old = a[_key(tuple(idx))]
    a[_key(tuple(idx))] = old - v
    return old


def atomic_min(a: Any, *index_and_value: Any) -> Any:
    """a[i, ...] = min(a[i, ...], v) as one atomic operation; returns the old
    value."""
    *idx, v = index_and_value
    old = a[_key(tuple(idx))]
    if v < old:
        a[_key(tuple(idx))] = v
    return old


def atomic_max(a: Any, *index_and_value: Any) -> Any:
    """a[i, ...] = max(a[i, ...], v) as one atomic operation; returns the old
    value."""
    *idx, v = index_and_value
    old = a[_key(tuple(idx))]
    if v > old:
        a[_key(tuple(idx))] = v
    return old


def local_array(shape: Any, dtype: Any) -> Any:
    """A zero-filled array of a constant shape, private to each iteration of the
    kernel's parallel loop (plain Python: a NumPy array)."""
    import numpy as np

    return np.zeros(shape, dtype=np.dtype(dtype.numpy_str))
