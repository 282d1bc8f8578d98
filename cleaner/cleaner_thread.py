"""`CleanerThread`: one of the `LogCleaner`'s workers as data (Kafka's LogCleaner.CleanerThread, whose loop here
is `LogCleaner._run`): its thread, its `Cleaner` or worker process, the partition it is cleaning and its last
statistics, which the gauges read."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minikafka.cleaner.cleaner_manager import TopicPartition
from minikafka.cleaner.cleaner_stats import CleanerStats
from minikafka.cleaner.filthiest_log import PreCleanStats
from minikafka.storage.unified_log import UnifiedLog

if TYPE_CHECKING:  # imported by the thread's first round (cleaner/log_cleaner.py), not at the broker's start
    from minikafka.cleaner.clean_worker import CleanWorker
    from minikafka.cleaner.cleaner import Cleaner


@dataclass(slots=True)
class CleanerThread:
    """One worker: its thread, its Cleaner (and offset map), the partition it is cleaning and its last stats.

    Fields are written by the worker thread only and read by metrics (single attribute reads)."""

    index: int
    cleaner: Cleaner | None = None
    #: the worker process that runs this thread's rounds (`minikafka.log.cleaner.worker.processes`)
    process: CleanWorker | None = None
    current: TopicPartition | None = None
    #: the log of `current`: the round stops once the broker hosts another log (or none) under that name
    current_log: UnifiedLog | None = None
    last_stats: CleanerStats = field(default_factory=CleanerStats)
    last_pre_clean_stats: PreCleanStats = field(default_factory=PreCleanStats)
    thread: threading.Thread | None = None
    dead: bool = False
