"""``python -m tack --cflags --libs``: the flags of a C program that links the runtime
the package uses, so the program and ``import tack`` share one runtime."""

from __future__ import annotations

import argparse
import sys

from tack import _paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tack",
        description="Print what a C program needs to link the runtime tack uses.",
    )
    parser.add_argument("--cflags", action="store_true", help="compiler flags (-I...)")
    parser.add_argument("--libs", action="store_true", help="linker flags, with an rpath")
    parser.add_argument("--includedir", action="store_true", help="the header folder")
    parser.add_argument("--libdir", action="store_true", help="the folder of libtack.so")
    parser.add_argument(
        "--pkgconfigdir", action="store_true", help="the folder of tack.pc (PKG_CONFIG_PATH)"
    )
    args = parser.parse_args(argv)
    out: list[str] = []
    if args.cflags:
        out += _paths.cflags()
    if args.libs:
        out += _paths.libs()
    if args.includedir:
        out.append(_paths.get_include())
    if args.libdir:
        out.append(_paths.get_library_dir())
    if args.pkgconfigdir:
        out.append(_paths.get_pkgconfig_dir())
    if not out:
        parser.print_usage(sys.stderr)
        print("python -m tack: give at least one of the options", file=sys.stderr)
        return 2
    print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
