"""`BufferedFrame`: a size-prefixed response frame held as several buffers, so record data is never joined.

The network layer writes its buffers in order with `transport.writelines` (uvloop and the TLS transport write
them without joining them); `len(frame)` is the frame's size in bytes, as for a `bytes` frame. Immutable by
convention once built: the buffers may be `memoryview` slices of segment reads. Not thread-safe.
"""

from __future__ import annotations

from typing import TypeAlias

#: A buffer of a frame: header bytes, or record data as read from a segment.
Buffer: TypeAlias = bytes | bytearray | memoryview


class BufferedFrame:
    """The buffers of one frame, in order, and their total size in bytes."""

    __slots__ = ("buffers", "size")

    def __init__(self, buffers: list[Buffer], size: int) -> None:
        self.buffers = buffers
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.buffers)


#: What the dispatcher hands the network layer to write: one `bytes`, or a `BufferedFrame`.
ResponseFrame: TypeAlias = bytes | BufferedFrame
