"""Append and roll under a failing disk: every write, fsync and rename of a produce/roll cycle fails in turn with
ENOSPC or EDQUOT, and an EIO takes the log dir offline as Kafka does.

The fault is injected where the operating system answers (`tests/disk_faults.py`). After each injected fault the
log must be exactly as before the failed append (same records, log end offset, files consistent), the next append
must succeed without a reopen, a reopen (recovery) must find the same records, and no temporary file may be left
behind.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from minikafka.protocol.errors import KafkaStorageError
from minikafka.protocol.records import iter_batches
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog
from tests.disk_faults import DiskFault
from tests.storage.conftest import T0, LogFactory, batch

# Small segments and an index entry per batch: a few appends cover log, index, time-index and snapshot writes.
CONFIG = {"segment.bytes": "400", "index.interval.bytes": "1"}
APPENDS_PER_CYCLE = 8


def values(log: UnifiedLog) -> list[bytes | None]:
    data = log.read(log.log_start_offset, 1 << 24).records
    return [record.value for b in iter_batches(data) for record in b.records()]


def leftovers(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir() if path.name.endswith((".tmp", ".swap", ".cleaned")))


def run_cycle(log: UnifiedLog, acked: list[bytes | None], start: int) -> bool:
    """APPENDS_PER_CYCLE appends; True if one failed (it must have changed nothing)."""
    for n in range(start, start + APPENDS_PER_CYCLE):
        value = b"value-%03d" % n
        before = (log.log_end_offset, log.size_bytes, [s.size_bytes for s in log.segments()])
        try:
            log.append_as_leader(batch(value, timestamp_ms=T0 + n))  # rising: time-index entries too
        except KafkaStorageError:
            assert (log.log_end_offset, log.size_bytes) == before[:2], "a failed append changed the log"
            assert values(log) == acked
            return True
        acked.append(value)
    return False


@pytest.mark.parametrize("error_number", [errno.ENOSPC, errno.EDQUOT])
def test_every_write_of_an_append_and_roll_cycle_fails_cleanly_and_the_next_append_succeeds(
    make_log: LogFactory, disk_fault: DiskFault, error_number: int
) -> None:
    fail_at = 1
    while True:
        log = make_log(CONFIG)
        acked: list[bytes | None] = []
        run_cycle(log, acked, 0)
        fault = disk_fault
        fault.fail_at, fault.calls, fault.fired, fault.error_number = fail_at, 0, None, error_number
        failed = run_cycle(log, acked, 100)
        if not fault.fired:
            assert not failed
            break
        # A failed write that no append reports is the roll's producer-state snapshot: skipping it only costs a
        # longer replay at the next load, so the roll goes on (the checks below still hold).
        fault.fail_at = None

        assert run_cycle(log, acked, 200) is False, "appends did not resume after the fault"
        assert values(log) == acked
        log.close()
        reopened = make_log(CONFIG)
        assert values(reopened) == acked, f"after a reopen, fault at write {fail_at}"
        assert leftovers(reopened.dir) == []
        reopened.append_as_leader(batch(b"after-reopen"))
        assert values(reopened) == [*acked, b"after-reopen"]
        reopened.close()
        for path in reopened.dir.iterdir():
            path.unlink()
        fail_at += 1
    assert fail_at > 10, f"the cycle made only {fail_at - 1} writes: the test covers too little"
    print(f"append/roll cycle: {fail_at - 1} fault points with {errno.errorcode[error_number]}, all consistent")


def test_a_failed_disk_takes_the_log_dir_offline_and_a_restart_finds_every_acknowledged_record(
    tmp_path: Path, clock: FakeClock, disk_fault: DiskFault
) -> None:
    manager = LogManager(tmp_path, {"log.segment.bytes": "400", "log.index.interval.bytes": "1"}, clock)
    manager.startup()
    manager.create_topic("orders", 2, {})
    manager.create_topic("audit", 1, {})
    orders, audit = manager.get_log("orders", 0), manager.get_log("audit", 0)
    acked: list[bytes | None] = []
    run_cycle(orders, acked, 0)
    audit.append_as_leader(batch(b"audit-0"))

    disk_fault.fail_at, disk_fault.calls, disk_fault.error_number = 1, 0, errno.EIO
    with pytest.raises(KafkaStorageError):
        orders.append_as_leader(batch(b"lost", timestamp_ms=T0 + 99))
    assert manager.offline_reason is not None and "Input/output error" in manager.offline_reason
    for log in (orders, manager.get_log("orders", 1), audit):
        with pytest.raises(KafkaStorageError, match="offline"):
            log.read(0, 1 << 20)
        with pytest.raises(KafkaStorageError, match="offline"):
            log.append_as_leader(batch(b"refused"))

    restarted = LogManager(tmp_path, {}, clock)
    restarted.startup()
    assert values(restarted.get_log("orders", 0)) == acked
    assert values(restarted.get_log("audit", 0)) == [b"audit-0"]
    assert leftovers(restarted.get_log("orders", 0).dir) == []
