"""Deleting and recreating a topic while a cleaning round of it runs (issue 28, item 3).

Kafka's LogManager.asyncDelete aborts the partition's cleaning and waits for the round to stop before the log is
closed; the round checks the log it cleans by identity, so a topic recreated under the same name is never
mistaken for it. Here a real LogCleaner thread (with its worker process) is held inside a round by its throttler
while the topic is deleted and recreated; afterwards the new topic's records are intact on disk (read again after
a restart), nothing is uncleanable and no cleaner thread died.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager
from tests.cleaner.compacted_log import COMPACT, SMALL, produce, read_all

TOPIC = "recreated"


@pytest.mark.parametrize("worker_processes", [True, False], ids=["worker-process", "in-thread"])
def test_delete_and_recreate_during_a_round(tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch,
                                            worker_processes: bool) -> None:
    manager = LogManager(tmp_path / "data", {}, clock)
    manager.startup()
    manager.create_topic(TOPIC, 1, COMPACT)
    old = manager.get_log(TOPIC, 0)
    assert old is not None
    for version in range(3):
        produce(old, [(b"k%d" % key, b"old-%d" % version) for key in range(50)])
        old.roll()
    produce(old, [(b"tail", b"old")])
    config = dataclasses.replace(SMALL, worker_processes=worker_processes, backoff_ms=20)
    cleaner = LogCleaner(manager, config, clock)
    in_round, release = threading.Event(), threading.Event()
    throttle = cleaner.throttler.maybe_throttle

    def held(observed_bytes: int) -> None:  # the round waits here, mid-way, until the test releases it
        in_round.set()
        assert release.wait(30)
        throttle(observed_bytes)

    monkeypatch.setattr(cleaner.throttler, "maybe_throttle", held)
    cleaner.startup()
    try:
        assert in_round.wait(30), "no cleaning round started"
        deleting = threading.Thread(target=manager.delete_topic, args=(TOPIC,))
        deleting.start()
        deleting.join(0.5)
        assert deleting.is_alive(), "the topic was deleted under a running cleaning round"
        release.set()
        deleting.join(30)
        assert not deleting.is_alive()
        assert not (tmp_path / "data" / f"{TOPIC}-0").exists()
        manager.create_topic(TOPIC, 1, COMPACT)
        new = manager.get_log(TOPIC, 0)
        assert new is not None and new is not old
        produce(new, [(b"k%d" % key, b"new") for key in range(10)])
        expected = [(offset, b"k%d" % offset, b"new") for offset in range(10)]
        assert read_all(new) == expected
        cleaner.manager.abort_and_pause((TOPIC, 0), 30)  # let any round of the new log finish, then hold it
        assert cleaner.manager.uncleanable_partitions() == {}
        assert cleaner.dead_thread_count == 0
        assert not any(path.name.endswith((".cleaned", ".swap", ".deleted")) for path in new.dir.iterdir())
    finally:
        cleaner.shutdown()
        manager.shutdown()
    restarted = LogManager(tmp_path / "data", {}, clock)
    restarted.startup()
    try:
        log = restarted.get_log(TOPIC, 0)
        assert log is not None
        assert read_all(log) == expected
    finally:
        restarted.shutdown()
