"""ExportedMemory: what Array.export_memory() returns, as plain Python values.

A consumer on another graphics or compute API needs no GPU library to read it: it
dispatches on handle_type ("posix_fd", "win32_kmt" or "mtl_buffer").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExportedMemory:
    backend: str
    """The backend that exported the memory, e.g. "cuda"."""
    size: int
    """Bytes of the array."""
    allocation_size: int
    """Bytes of the allocation behind the handle (rounded up to its granularity)."""
    handle: int
    """The OS handle: a file descriptor, a KMT handle or an object pointer."""
    handle_type: str
    """How to read handle: "posix_fd", "win32_kmt" or "mtl_buffer"."""
    device_uuid: bytes
    """The device's UUID, to match devices across APIs."""
