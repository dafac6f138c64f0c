"""The package's public names, as type checkers and `from tack import *` see them.

The stubs themselves are checked against the built extension by `make typecheck`
(mypy's stubtest) and the examples by `mypy --strict`; these tests hold the list of
public names to what the package really exports.
"""

import types

import tack


def test_all_lists_every_public_name():
    public = {
        name
        for name, value in vars(tack).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(tack.__all__) - {"__version__"}


def test_all_names_each_public_name_once():
    twice = sorted({name for name in tack.__all__ if tack.__all__.count(name) > 1})
    assert not twice, f"tack.__all__ lists {twice} more than once"


def test_star_import_binds_the_api_and_keeps_builtins():
    namespace: dict[str, object] = {}
    exec("from tack import *", namespace)
    assert namespace["array"] is tack.array
    assert namespace["Array"] is tack.Array
    assert namespace["kernel"] is tack.kernel
    # tack.bool is a dtype; like NumPy's __all__, Tack's lists it (the stubs say
    # builtins.bool wherever they mean the builtin).
    assert namespace["bool"] is tack.bool
    assert namespace["__version__"] == tack.__version__


def test_version_is_the_distribution_version():
    from importlib.metadata import version

    assert tack.__version__ == version("tack")
