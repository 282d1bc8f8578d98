"""Producer id allocation for InitProducerId that never repeats across restarts.

Ids are handed out from blocks; the end of the current block (a high-water mark) is persisted atomically in
`<log_dir>/producer-id-block` *before* any id of the block is returned, so after a crash the next process
starts at the persisted mark and can skip ids, but never reuse one.
"""

from __future__ import annotations

import threading
from pathlib import Path

from minikafka.storage.checkpoint import atomic_write

PRODUCER_ID_BLOCK_FILE = "producer-id-block"
BLOCK_SIZE = 1000


class ProducerIdManager:
    """Owns the producer-id high-water-mark file; thread-safe (one lock)."""

    def __init__(self, log_dir: Path, block_size: int = BLOCK_SIZE) -> None:
        self.path = Path(log_dir) / PRODUCER_ID_BLOCK_FILE
        self._block_size = block_size
        self._lock = threading.Lock()
        try:
            self._high_water_mark = int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            self._high_water_mark = 0
        self._next_id = self._high_water_mark

    def next_producer_id(self) -> int:
        with self._lock:
            if self._next_id >= self._high_water_mark:
                self._high_water_mark = self._next_id + self._block_size
                atomic_write(self.path, f"{self._high_water_mark}\n".encode())
            producer_id = self._next_id
            self._next_id += 1
            return producer_id
