"""Where the package's C runtime is, for C programs that link it (``tack/python.h``).

An installed package carries ``tack/lib/libtack.so``, ``tack/include/tack/*.h`` and
``tack/lib/pkgconfig/tack.pc``. An editable install (``make setup``) runs from its build
folder, where the library sits beside the extension and the headers under ``include/``
(``tack-uninstalled.pc`` describes that layout to pkg-config).
"""

from __future__ import annotations

from pathlib import Path

from tack import _tack

_PACKAGE = Path(__file__).resolve().parent
_BUILD = Path(_tack.__file__).resolve().parent


def _installed() -> bool:
    return (_PACKAGE / "lib" / "libtack.so").is_file()


def get_library_dir() -> str:
    """The folder of the libtack this package uses: link a C program with
    ``-L<dir> -ltack -Wl,-rpath,<dir>`` to share its runtime."""
    return str(_PACKAGE / "lib" if _installed() else _BUILD)


def get_include() -> str:
    """The folder to add with ``-I`` for ``#include "tack/tack.h"`` and
    ``"tack/python.h"`` (the latter also needs Python's own include folder)."""
    return str(_PACKAGE / "include" if _installed() else _BUILD / "include")


def get_pkgconfig_dir() -> str:
    """The folder to put on ``PKG_CONFIG_PATH`` for ``pkg-config tack``."""
    return str(_PACKAGE / "lib" / "pkgconfig" if _installed() else _BUILD)


def cflags() -> list[str]:
    """The compiler flags of a C program that includes Tack's headers."""
    return [f"-I{get_include()}"]


def libs() -> list[str]:
    """The linker flags of a C program that shares the package's runtime: the rpath
    makes the program load this very file, which the extension loads too."""
    lib = get_library_dir()
    return [f"-L{lib}", "-ltack", f"-Wl,-rpath,{lib}"]
