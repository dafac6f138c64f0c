"""Foreign metadata whose items run Python code while Tack reads them.

An item's ``__index__`` or ``__bool__`` may clear the dict it came from, which frees
every item the dict alone held. Each case runs in a child interpreter with
PYTHONMALLOC=debug, which overwrites freed memory, so a read of an item Tack does not
own crashes the child instead of passing by luck.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_PRELUDE = """
import tack

class Stop(Exception):
    pass

class Clears:
    # An int-like item that empties its dict when read, then gives `value`.
    def __init__(self, d, value):
        self.d, self.value = d, value
    def __index__(self):
        self.d.clear()
        return self.value
    __bool__ = lambda self: bool(self.__index__())

class Raises:
    def __index__(self):
        raise Stop
    __bool__ = __index__

class Producer:
    # The interface dict is made fresh, so the dict holds the only reference to
    # each item tuple.
    def __init__(self, make):
        self.make = make
    @property
    def __cuda_array_interface__(self):
        return self.make()

def expect(fn, exc=Stop, text=""):
    try:
        fn()
    except exc as e:
        assert text in str(e), e
        return
    raise AssertionError(f"no {exc.__name__}")
"""

CASES = {
    "cai_shape": """
        def make():
            d = {"version": 3, "typestr": "<f4", "data": (4096, False)}
            d["shape"] = (Clears(d, 2), Raises())
            return d
        expect(lambda: tack.from_dlpack(Producer(make)))
    """,
    "cai_strides": """
        def make():
            d = {"version": 3, "typestr": "<f4", "data": (4096, False),
                 "shape": (2, 3)}
            d["strides"] = (Raises(), Clears(d, 4))
            return d
        expect(lambda: tack.from_dlpack(Producer(make)))
    """,
    "cai_data": """
        def make():
            d = {"version": 3, "typestr": "<f4", "shape": (2,)}
            d["data"] = (Clears(d, 4096), Raises())
            return d
        # The pointer must be an int: refused before the flag is read.
        expect(lambda: tack.from_dlpack(Producer(make)), ValueError, "data pointer")
    """,
    "cai_typestr": """
        class Str:
            # A dtype spelling whose conversion empties the dict.
            def __init__(self, d):
                self.d = d
            @property
            def dtype(self):
                self.d.clear()
                raise Stop
        def make():
            d = {"version": 3, "shape": (2,), "data": (4096, False)}
            d["typestr"] = Str(d)
            return d
        expect(lambda: tack.from_dlpack(Producer(make)), TypeError, "Str object")
    """,
    "external_context": """
        class Bad:
            def __init__(self, d):
                self.d = d
            def __index__(self):
                self.d.clear()
                raise TypeError("not a handle")
        d = {}
        d["driver"] = Bad(d)
        expect(lambda: tack.device("level_zero", external_context=d), ValueError,
               "integer handle, not Bad")
    """,
    "shape_list": """
        shape = []
        shape[:] = [Clears(shape, 2), Raises()]
        expect(lambda: tack.zeros(shape), TypeError, "not Raises")
    """,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_items_that_clear_their_container_are_read_safely(case):
    code = _PRELUDE + textwrap.dedent(CASES[case])
    env = dict(os.environ, PYTHONMALLOC="debug")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
