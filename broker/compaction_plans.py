"""`POST /admin/compact?topic=T&partition=N&exact=true`: receive a retained-offset plan and queue its exact round.

The request body is the plan file (cleaner/retained_offset_plan.py), sent with a Content-Length. It is never held in
memory: it is streamed to `<log.dir>/.compaction-plans/` in 64 KiB reads and 1 MiB writes (in worker threads), after
a size check against the Content-Length (a plan of the partition's whole offset span at most, and room on the disk).
Then `LogCleaner.request_exact_compaction` validates the file in one streaming pass and queues the round; the cleaner
unlinks the file once the request is done. Leftovers of a crash are removed at startup (`clear`).

Replies: 400 with `{"error": ...}` naming what is wrong (missing partition, a plan for another topic id or
partition, a range outside the log, unsorted, truncated, corrupt; with `wait=true` also a plan the round refused, e.g.
one retaining an aborted record), 404 for an unknown topic or partition, 411 without Content-Length, 413 for a body
larger than any plan of the partition, 507 when the log dir lacks the space; else manual compaction's reply (200 when
done, 202 while queued) with the plan's count and range. Event-loop thread only (the file work runs in threads).
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any, BinaryIO

from minikafka.broker.admin_http import RequestBody
from minikafka.broker.admin_workers import admin_thread, wait_for_event
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.cleaner.retained_offset_plan import (
    HEADER_BYTES,
    OFFSET_BYTES,
    TRAILER_BYTES,
    InvalidRetainedOffsetPlanError,
    plan_size_bytes,
)
from minikafka.protocol.errors import InvalidConfigError, UnknownTopicOrPartitionError

log = logging.getLogger(__name__)

PLANS_DIR = ".compaction-plans"
_WRITE_BYTES = 1 << 20
#: free space kept on the log dir beyond the plan itself
_SPARE_DISK_BYTES = 64 * 1024 * 1024

Reply = tuple[int, str, bytes]


def _reply(status: int, body: dict[str, Any]) -> Reply:
    return status, "application/json", json.dumps(body).encode() + b"\n"


class CompactionPlanUploads:
    """Owns `<log.dir>/.compaction-plans/` (uploaded plans until their request is done). Event-loop thread only."""

    def __init__(self, log_dir: Path, log_cleaner: LogCleaner) -> None:
        self.directory = Path(log_dir) / PLANS_DIR
        self.log_cleaner = log_cleaner

    def clear(self) -> None:
        """Remove plans left by a broker that stopped mid-request (when the admin server starts, before it serves)."""
        shutil.rmtree(self.directory, ignore_errors=True)

    async def compact_exact(self, topic: str, partition: int | None, body: RequestBody, *, wait: bool,
                            timeout_s: float) -> Reply:
        if partition is None:
            return _reply(400, {"error": "exact compaction needs a partition parameter (a plan is for one partition)"})
        try:
            max_bytes = await admin_thread(self._max_plan_bytes, topic, partition)
        except UnknownTopicOrPartitionError as error:
            return _reply(404, {"error": error.message or str(error)})
        except InvalidConfigError as error:
            return _reply(400, {"error": error.message or str(error)})
        length = body.content_length
        if length is None:
            return _reply(411, {"error": "the plan must be sent with a Content-Length"})
        if length < plan_size_bytes(0) or (length - HEADER_BYTES - TRAILER_BYTES) % OFFSET_BYTES:
            return _reply(400, {"error": f"a body of {length} bytes is not a retained-offset plan (its size is "
                                         f"{HEADER_BYTES} + 8 * count + {TRAILER_BYTES} bytes)"})
        if length > max_bytes:
            return _reply(413, {"error": f"a plan of {length} bytes has more offsets than {topic}-{partition} has "
                                         f"(at most {max_bytes} bytes)"})
        path = self.directory / f"{topic}-{partition}-{uuid.uuid4().hex}.plan"
        try:
            free_bytes = await admin_thread(self._prepare, length)
            if free_bytes is not None:
                return _reply(507, {"error": f"not enough space in the log dir for a plan of {length} bytes "
                                             f"({free_bytes} bytes free)"})
            await self._receive(body, path)
        except ValueError as error:  # the client sent less than it announced
            await admin_thread(path.unlink, missing_ok=True)
            return _reply(400, {"error": str(error)})
        except BaseException:
            await admin_thread(path.unlink, missing_ok=True)
            raise
        try:
            request = await admin_thread(
                self.log_cleaner.request_exact_compaction, topic, partition, path, delete_plan=True)
        except InvalidRetainedOffsetPlanError as error:
            return _reply(400, {"error": str(error)})
        except UnknownTopicOrPartitionError as error:
            return _reply(404, {"error": error.message or str(error)})
        except InvalidConfigError as error:
            return _reply(400, {"error": error.message or str(error)})
        if wait:
            await wait_for_event(request.done, timeout_s)
        reply = request.to_json()
        refused = [r for r in reply["results"] if r["status"] == "refused"]
        if refused:
            return _reply(400, {**reply, "error": refused[0]["error"]})
        return _reply(200 if request.done.is_set() else 202, reply)

    def _max_plan_bytes(self, topic: str, partition: int) -> int:
        self.log_cleaner.compaction_target(topic, partition)
        partition_log = self.log_cleaner.log_manager.get_log(topic, partition)
        if partition_log is None:
            raise UnknownTopicOrPartitionError(f"Partition {topic}-{partition} does not exist")
        return plan_size_bytes(max(partition_log.log_end_offset - partition_log.log_start_offset, 0))

    def _prepare(self, length: int) -> int | None:
        """Create the directory; the free bytes if the plan does not fit with room to spare, else None."""
        self.directory.mkdir(parents=True, exist_ok=True)
        free_bytes = shutil.disk_usage(self.directory).free
        return free_bytes if free_bytes < length + _SPARE_DISK_BYTES else None

    async def _receive(self, body: RequestBody, path: Path) -> None:
        """Stream the body to `path`: 64 KiB reads on the loop, 1 MiB writes in a thread."""
        file: BinaryIO = await admin_thread(open, path, "wb")
        try:
            pending = bytearray()
            async for chunk in body.chunks():
                pending += chunk
                if len(pending) >= _WRITE_BYTES:
                    await admin_thread(file.write, bytes(pending))
                    pending.clear()
            if pending:
                await admin_thread(file.write, bytes(pending))
        finally:
            await admin_thread(file.close)
