"""Checkpoint files: Kafka's text format and atomic replacement."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.checkpoint import OffsetCheckpointFile


def test_round_trip_and_format(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    assert checkpoint.read() == {}
    checkpoint.write({("b", 1): 42, ("a", 0): 7})
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n2\na 0 7\nb 1 42\n"
    assert checkpoint.read() == {("a", 0): 7, ("b", 1): 42}
    assert not list(tmp_path.glob("*.tmp"))
    checkpoint.write({})
    assert checkpoint.read() == {}


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\na 0 1\n", "0\n1\na zero 1\n", ""])
def test_malformed_files_raise_storage_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cleaner-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(KafkaStorageError):
        OffsetCheckpointFile(path).read()
