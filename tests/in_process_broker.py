"""`InProcessBroker`: a KafkaServer on its own event-loop thread in the test process, for tests that reach into
its storage (the `disk_fault` seam, a flush started by the test) while real clients talk to it over loopback."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path

from minikafka.broker.config import KafkaConfig
from minikafka.broker.server import KafkaServer


class InProcessBroker:
    """A KafkaServer on its own event-loop thread in this process, on a fixed loopback port."""

    def __init__(self, data_dir: Path, port: int, props: Mapping[str, str]) -> None:
        self.data_dir, self.port, self.props = data_dir, port, dict(props)
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.server: KafkaServer | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> InProcessBroker:
        self._started.clear()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self._thread.start()
        assert self._started.wait(30), "the broker did not start"
        return self

    async def _main(self) -> None:
        config = KafkaConfig({**self.props, "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                              "log.dirs": str(self.data_dir)})
        self.server = KafkaServer(config)
        await self.server.startup()
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._started.set()
        await self._stop.wait()
        try:
            await self.server.shutdown()
        except Exception:  # an offline log dir cannot be checkpointed; the next start recovers
            pass

    def stop(self) -> None:
        assert self._loop is not None and self._stop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def offline(self) -> bool:
        return self.server is not None and self.server.log_manager.offline_reason is not None
