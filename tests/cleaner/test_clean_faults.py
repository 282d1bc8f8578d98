"""A cleaning round under a failing disk (issue 13, item 2): every write, fsync and rename of one round — the
cleaned segment and its indexes, the swap, the cleaner-offset-checkpoint — fails in turn, with ENOSPC and with EIO.

After each fault the partition must read exactly as a consumer from offset 0 saw it before (the latest value of
every key at its offset; cleaning may only have removed superseded records), no `.cleaned`/`.swap` file may be
left behind, the next round (disk healthy again) must clean it completely, and a restart must find the same
records. ENOSPC fails only the round; EIO takes the log dir offline (as Kafka's cleaner does) and a restart finds
every record. The round runs in-process (`minikafka.log.cleaner.worker.processes=false`) so the seam reaches it.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from minikafka.cleaner.config import CleanerConfig
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from tests.cleaner.compacted_log import COMPACT, T0, produce, read_all
from tests.disk_faults import DiskFault

PROPS = {"log.segment.bytes": "300", "log.index.interval.bytes": "1"}
CONFIG = CleanerConfig(dedupe_buffer_size=1024 * 1024, backoff_ms=100, worker_processes=False)
KEYS = 6
ROUNDS = 4


def latest(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[bytes | None, tuple[int, bytes | None]]:
    view: dict[bytes | None, tuple[int, bytes | None]] = {}
    for offset, key, value in records:
        view[key] = (offset, value)
    return view


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.name.endswith((".tmp", ".swap", ".cleaned")))


def start(data_dir: Path, clock: FakeClock) -> LogManager:
    manager = LogManager(data_dir, PROPS, clock)
    manager.startup()
    return manager


@pytest.mark.parametrize("error_number", [errno.ENOSPC, errno.EIO])
def test_every_write_fsync_and_rename_of_a_cleaning_round_fails_cleanly(
        tmp_path: Path, disk_fault: DiskFault, error_number: int) -> None:
    fail_at = 1
    while True:
        clock = FakeClock(T0)
        data_dir = tmp_path / f"fault-{fail_at}"
        manager = start(data_dir, clock)
        manager.create_topic("t", 1, COMPACT)
        log = manager.get_log("t", 0)
        assert log is not None
        for r in range(ROUNDS):
            produce(log, [(b"k%d" % i, b"v%d-%d" % (r, i)) for i in range(KEYS)])
        produce(log, [(b"tail", b"x")])
        before = read_all(log)
        cleaner = LogCleaner(manager, CONFIG, clock)

        disk_fault.fail_at, disk_fault.calls, disk_fault.fired, disk_fault.error_number = fail_at, 0, None, error_number
        cleaner.run_once(cleaner.workers[0])
        disk_fault.fail_at = None
        if disk_fault.fired is None:
            assert latest(read_all(log)) == latest(before)
            manager.shutdown()
            break
        where = f"fault at call {fail_at} ({disk_fault.fired}, {errno.errorcode[error_number]})"

        if error_number == errno.EIO:
            assert manager.offline_reason is not None, f"{where}: EIO did not take the log dir offline"
            with pytest.raises(KafkaStorageError, match="offline"):
                log.read(0, 1 << 20)
        else:
            assert manager.offline_reason is None, where
            after = read_all(log)
            assert latest(after) == latest(before), f"{where}: the consumer's view changed"
            assert set(after) <= set(before), f"{where}: records appeared"
            assert leftovers(data_dir) == [], f"{where}: temporary files left"
            clock.advance_ms(cleaner.manager.retry_backoff_ms * 8)
            cleaner.run_once(cleaner.workers[0])
            cleaned = read_all(log)
            assert latest(cleaned) == latest(before) and len(cleaned) == KEYS + 1, f"{where}: next round"
        manager.shutdown()

        restarted = start(data_dir, clock)
        reloaded = restarted.get_log("t", 0)
        assert reloaded is not None
        assert latest(read_all(reloaded)) == latest(before), f"{where}: after a restart"
        assert leftovers(data_dir) == [], f"{where}: temporary files after a restart"
        restarted.shutdown()
        fail_at += 1
    assert fail_at > 10, f"the round made only {fail_at - 1} calls: the test covers too little"
    print(f"cleaning round: {fail_at - 1} fault points with {errno.errorcode[error_number]}, all consistent")
