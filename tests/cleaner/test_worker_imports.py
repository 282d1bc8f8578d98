"""What a real cleaner worker process imports (cleaner/worker_entry.py): aiokafka's record extension it uses, not
aiokafka's client or crc32c's version lookup that their package `__init__`s would import.

The worker is observed, not replaced: a child interpreter run with `-X importtime` (which multiprocessing passes on
to the processes it spawns) starts a `CleanWorker` and stops it; the import lines after the marker it prints
first are the worker's (and multiprocessing's resource tracker's), since the child imported what it needs before.
"""

from __future__ import annotations

import subprocess
import sys

MARKER = "--- the worker starts here ---"

CHILD = f"""\
import sys
from minikafka.cleaner.clean_worker import CleanWorker

worker = CleanWorker(1 << 20, 0.9)
print({MARKER!r}, file=sys.stderr, flush=True)
worker.start()
worker.close()  # "stop" waits in the pipe until the worker has imported and reached its loop
"""

#: imported by aiokafka's, aiokafka.record's and crc32c's package `__init__`, which the worker defers
NEVER_IN_THE_WORKER = ("aiokafka.client", "aiokafka.consumer", "aiokafka.producer", "aiokafka.conn",
                       "aiokafka.record.memory_records", "importlib.metadata", "crc32c._cli")


def worker_imports() -> list[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    _, marker, after = done.stderr.partition(MARKER)
    assert marker, done.stderr[-3000:]
    return [line.rpartition("|")[2].strip() for line in after.splitlines() if line.startswith("import time:")]


def test_the_worker_imports_the_record_extension_it_uses_and_not_the_client_around_it() -> None:
    imported = worker_imports()
    # the worker's own imports were seen (else the checks below would pass on nothing)
    assert "minikafka.cleaner.clean_worker" in imported
    assert "aiokafka.record._crecords.default_records" in imported
    assert [name for name in imported if name in NEVER_IN_THE_WORKER] == []
