"""Reading segment files as a tool outside the broker would: the bytes of their batches."""

from __future__ import annotations

from pathlib import Path


def batch_data(path: Path) -> bytes:
    """A `.log` file's batches: its bytes up to the zeros an active segment's file is filled ahead with
    (storage/file_records.py), which begin where a batch's length field would be 0."""
    data = path.read_bytes()
    position = 0
    while position + 12 <= len(data) and (length := int.from_bytes(data[position + 8:position + 12], "big")):
        position += 12 + length
    return data[:position]


def batch_bytes(path: Path) -> int:
    """The size of a `.log` file's batches (see `batch_data`)."""
    return len(batch_data(path))
