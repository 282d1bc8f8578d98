"""Idempotent producer rules (notes §3.4) and their survival across close/reopen."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from minikafka.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from minikafka.storage.producer_id_manager import ProducerIdManager
from minikafka.storage.producer_state import ProducerStateManager
from tests.storage.conftest import LogFactory, batch

PID = 4000


def produce(seq: int, *values: bytes, epoch: int = 0) -> bytes:
    return batch(*(values or (b"v",)), producer_id=PID, producer_epoch=epoch, base_sequence=seq)


def test_duplicate_returns_original_offsets_and_writes_nothing(make_log: LogFactory) -> None:
    log = make_log()
    log.append_as_leader(batch(b"plain"))
    first = log.append_as_leader(produce(0, b"a", b"b"))
    second = log.append_as_leader(produce(2, b"c"))
    size = log.size_bytes
    dup = log.append_as_leader(produce(0, b"a", b"b"))
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (first.first_offset, first.last_offset)
    dup2 = log.append_as_leader(produce(2, b"c"))
    assert dup2.duplicate and dup2.first_offset == second.first_offset
    assert log.size_bytes == size and log.log_end_offset == 4


def test_sequence_gap_and_epoch_rules(make_log: LogFactory) -> None:
    log = make_log()
    log.append_as_leader(produce(5))  # no state yet: any sequence accepted
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(produce(7))
    log.append_as_leader(produce(6))
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(produce(3, epoch=1))  # a new epoch must start at 0
    log.append_as_leader(produce(0, epoch=1))
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(produce(1, epoch=0))
    assert log.log_end_offset == 3


def test_only_last_five_batches_are_deduplicated(make_log: LogFactory) -> None:
    log = make_log()
    for seq in range(7):
        log.append_as_leader(produce(seq))
    assert log.append_as_leader(produce(2)).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(produce(1))  # evicted from the 5-batch cache


def test_sequence_wraps_at_int_max(make_log: LogFactory) -> None:
    log = make_log()
    log.append_as_leader(produce(2**31 - 1))
    assert not log.append_as_leader(produce(0)).duplicate


@pytest.mark.parametrize("clean", [True, False])
def test_state_survives_reopen(make_log: LogFactory, clean: bool) -> None:
    log = make_log()
    log.append_as_leader(produce(0))
    original = log.append_as_leader(produce(1, b"x", b"y"))
    if clean:
        log.close()
    else:
        log.flush()
        for path in log.dir.glob("*.snapshot"):
            path.unlink()  # no snapshot: rebuilt from the log
    reopened = make_log(clean_shutdown=clean)
    dup = reopened.append_as_leader(produce(1, b"x", b"y"))
    assert dup.duplicate and dup.first_offset == original.first_offset
    with pytest.raises(OutOfOrderSequenceNumberError):
        reopened.append_as_leader(produce(9))
    assert reopened.append_as_leader(produce(3)).first_offset == 3


def test_snapshot_file_format(tmp_path: Path, make_log: LogFactory) -> None:
    log = make_log()
    log.append_as_leader(produce(0, b"a", b"b"))
    log.close()
    data = (log.dir / "00000000000000000002.snapshot").read_bytes()
    version, crc = struct.unpack_from(">hI", data)
    assert version == 1 and crc == crc32c.crc32c(data[6:])
    (count,) = struct.unpack_from(">i", data, 6)
    assert count == 1
    entry = struct.unpack_from(">qhiqiqiq", data, 10)
    assert entry[:5] == (PID, 0, 1, 1, 1)  # pid, epoch, last seq, last offset, offset delta
    assert entry[6:] == (-1, -1)
    assert len(data) == 10 + 46


def test_corrupt_snapshot_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000005.snapshot").write_bytes(b"\x00\x01garbage")
    manager = ProducerStateManager(tmp_path)
    assert manager.load_latest_snapshot(10) is None
    assert not list(tmp_path.glob("*.snapshot"))


def test_producer_ids_never_repeat_across_restarts(tmp_path: Path) -> None:
    manager = ProducerIdManager(tmp_path, block_size=10)
    first = [manager.next_producer_id() for _ in range(15)]
    assert first == list(range(15))
    again = ProducerIdManager(tmp_path, block_size=10)
    assert again.next_producer_id() >= 20  # the persisted block end, never a reused id
