"""Shutdown waits for the threads the broker started (broker/server.py): a periodic action (flush, roll, retention,
checkpoints) caught mid-way in its worker thread finishes before the logs are closed, instead of running on against
closed logs after `shutdown()` returned."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from minikafka.broker.config import KafkaConfig
from minikafka.broker.server import KafkaServer


def test_a_periodic_action_running_in_a_thread_is_waited_for(tmp_path: Path) -> None:
    entered = threading.Event()
    events: list[str] = []

    def slow_flush() -> None:
        entered.set()
        time.sleep(2)
        events.append("thread finished")

    async def scenario() -> None:
        server = KafkaServer(KafkaConfig({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0",
                                          "minikafka.metrics.port": "-1", "log.cleaner.enable": "false"}))
        await server.startup()

        async def action() -> None:
            await asyncio.to_thread(slow_flush)

        server._schedule("probe", 1, action)
        assert await asyncio.to_thread(entered.wait, 10)
        await server.shutdown()
        events.append("shutdown returned")

    asyncio.run(scenario())
    assert events == ["thread finished", "shutdown returned"]
