"""In situ analysis of the heat field of examples/c/in_situ.c (docs/in_situ.md).

The C host runs this file inside its process and calls analyse(field, step, outdir)
every few steps with its field as a tack.Array over the host's own memory (or, with
--device cuda, a device copy). Nothing here copies the field on the CPU: the Tack
kernel runs on its memory, NumPy reads a view of it, VTK wraps it. Every view is a
local, dropped when analyse returns, so the host can take its memory back
(tack_array_reclaim) before the next step overwrites it.

The host compiles this file from its text, so the kernel is made from source text
(tack.kernel(..., source=...)), which works wherever the code runs: a file, exec, or
a host's PyRun_String.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

import tack

KERNELS = """
def hottest(t):
    m = t[0, 0]
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            m = max(m, t[i, j])
    return m
"""
_namespace: dict[str, Any] = {}
exec(KERNELS, _namespace)
hottest = tack.kernel(_namespace["hottest"], source=KERNELS)

# The temperature that maps to white in the pictures: the hot spot's start.
TOP = 100.0


def write_png(path: Path, values: np.ndarray[Any, Any]) -> None:
    """An 8-bit grayscale PNG of a 2-D field, 0 black and TOP white (zlib only)."""
    gray = np.clip(values * (255.0 / TOP), 0.0, 255.0).astype(np.uint8)
    height, width = gray.shape
    rows = b"".join(b"\x00" + row.tobytes() for row in gray)  # filter 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def write_vti(path: Path, field: tack.Array) -> bool:
    """The field as a VTK image with point data "temperature", over its memory.
    False when VTK does not import."""
    try:
        from vtkmodules.vtkCommonDataModel import vtkImageData
        from vtkmodules.vtkIOXML import vtkXMLImageDataWriter

        from tack.interop.vtk import array_to_vtk
    except ImportError:
        return False
    n, m = field.shape
    image = vtkImageData()
    image.SetDimensions(m, n, 1)  # x runs along a row: the last axis
    image.GetPointData().SetScalars(array_to_vtk(field.reshape(-1), name="temperature"))
    writer = vtkXMLImageDataWriter()
    writer.SetFileName(str(path))
    writer.SetInputData(image)
    return bool(writer.Write())


def analyse(field: tack.Array, step: int, outdir: str) -> tuple[float, float, int]:
    """The peak temperature (a Tack kernel), the total heat (NumPy) and the address
    the analysis read, for the host to check that nothing was copied."""
    peak = hottest(field)
    if field.device.backend == "cpu":
        values = np.from_dlpack(field)  # a view of the host's memory
        seen = values.ctypes.data
        write_vti(Path(outdir) / f"heat_{step:05d}.vti", field)
    else:
        values = field.numpy()  # NumPy needs the host: a copy, for the picture only
        seen = field.ptr
    write_png(Path(outdir) / f"heat_{step:05d}.png", values)
    return float(peak), float(values.sum()), seen
