"""`POST /admin/erase?topic=T&key=K|key_hex=H[&partition=N][&tombstone_offset=O&requested_at_ms=R][&timeout_ms=M]`:
erase one key of a compacted topic and answer with an erasure receipt.

1. A tombstone for the key is appended to the partition Kafka's default partitioner picks (or `partition`), unless
   `tombstone_offset` names one written by an earlier call (`minikafka erase --wait` retries that way);
2. the partition is compacted now (manual compaction: the active segment is rolled, the dirty-ratio threshold is
   ignored, `min.compaction.lag.ms` still holds), waiting up to `timeout_ms`;
3. every segment file of the partition directory — `.log` and the `.cleaned`/`.swap`/`.deleted` leftovers — is read
   for records of the key below the tombstone (broker/key_records.py).

The receipt is `verified` only when no such record is left on disk. Otherwise `reason` says what holds it and
`retry_after_ms` when a retry can succeed: `min.compaction.lag.ms` (the tombstone's segment is not cleanable before
its newest record is that old), `file.delete.delay.ms` (the old values sit in segments renamed `.deleted`, unlinked
after that delay), or a round that did not clean. The tombstone itself is removed by a round after
`delete.retention.ms` has passed since the round that cleaned past it (`tombstone_removable_after`).
The key is never echoed: the receipt names it by SHA-256. Event-loop thread only (the tombstone is appended on the
loop, as a Produce is; file and cleaner work in threads).
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from minikafka.broker.admin_workers import admin_thread, wait_for_event
from minikafka.broker.key_records import default_partition, key_sha256, parse_key, scan_partition_dir
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import InvalidConfigError, KafkaError, UnknownTopicOrPartitionError
from minikafka.protocol.records import build_batch
from minikafka.protocol.records.record import Record
from minikafka.storage.clock import Clock
from minikafka.storage.log_manager import LogManager
from minikafka.storage.unified_log import UnifiedLog

Reply = tuple[int, str, bytes]
DEFAULT_TIMEOUT_MS = 60_000
#: when a round did not clean for another reason (paused, still queued), try again after this long
_RETRY_MS = 1000


def iso_utc(time_ms: int | None) -> str | None:
    if time_ms is None:
        return None
    return datetime.datetime.fromtimestamp(time_ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")


def _reply(status: int, body: dict[str, Any]) -> Reply:
    return status, "application/json", json.dumps(body).encode() + b"\n"


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


class Erasure:
    """Serves `/admin/erase`: writes tombstones, asks the cleaner, reads the files. Holds no state of its own;
    event-loop thread only."""

    def __init__(self, log_manager: LogManager, replica_manager: ReplicaManager, log_cleaner: LogCleaner,
                 clock: Clock) -> None:
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self.log_cleaner = log_cleaner
        self.clock = clock

    async def erase(self, query: dict[str, list[str]]) -> Reply:
        topic = _first(query, "topic")
        if not topic:
            return _reply(400, {"error": "missing topic parameter"})
        try:
            key = parse_key(_first(query, "key"), _first(query, "key_hex"))
            partition_text, offset_text = _first(query, "partition"), _first(query, "tombstone_offset")
            timeout_s = int(_first(query, "timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000
            requested_at_ms = int(_first(query, "requested_at_ms") or self.clock.time_ms())
            tombstone_offset = int(offset_text) if offset_text is not None else None
            partition = int(partition_text) if partition_text is not None else None
        except ValueError as error:
            return _reply(400, {"error": str(error)})
        meta = self.log_manager.topic(topic)
        if meta is None:
            return _reply(404, {"error": f"Topic {topic} does not exist"})
        if partition is None:
            partition = default_partition(key, meta.num_partitions)
        try:
            await admin_thread(self.log_cleaner.compaction_target, topic, partition)
        except UnknownTopicOrPartitionError as error:
            return _reply(404, {"error": error.message or str(error)})
        except InvalidConfigError as error:
            return _reply(400, {"error": error.message or str(error)})
        log = self.log_manager.get_log(topic, partition)
        if log is None:
            return _reply(404, {"error": f"Partition {topic}-{partition} does not exist"})
        if tombstone_offset is None:
            try:  # on the loop, as a Produce appends: the append wakes the fetches waiting in the purgatory
                tombstone_offset = self._append_tombstone(topic, partition, key)
            except KafkaError as error:
                return _reply(500, {"error": f"the tombstone could not be written: {error.message or error}"})
        elif not 0 <= tombstone_offset < log.log_end_offset:
            return _reply(400, {"error": f"tombstone_offset {tombstone_offset} is not in {topic}-{partition}"})
        request = await admin_thread(self.log_cleaner.request_compaction, topic, partition)
        await wait_for_event(request.done, timeout_s)
        compaction = request.to_json()
        scan, _ = await admin_thread(scan_partition_dir, log.dir, key)
        now_ms = self.clock.time_ms()
        older = scan.older_than(tombstone_offset)
        config = log.config
        receipt: dict[str, Any] = {
            "topic": topic, "partition": partition, "key_sha256": key_sha256(key),
            "tombstone_offset": tombstone_offset,
            "requested_at": iso_utc(requested_at_ms), "requested_at_ms": requested_at_ms,
            "verified": not older, "verified_at": iso_utc(now_ms) if not older else None,
            "segments_scanned": len(scan.files), "files_scanned": scan.files, "bytes_scanned": scan.bytes_scanned,
            "older_records_on_disk": [r.to_json() for r in older],
            "min_compaction_lag_ms": config.min_compaction_lag_ms,
            "delete_retention_ms": config.delete_retention_ms,
            "tombstone_removable_after": iso_utc(now_ms + config.delete_retention_ms) if not older else None,
            "compaction": compaction["results"][0]["status"] if compaction.get("results") else "pending",
        }
        if older:
            reason, retry_after_ms = self._why_not_gone(log, tombstone_offset, older, compaction, now_ms)
            receipt.update(reason=reason, retry_after_ms=retry_after_ms, retry_at=iso_utc(now_ms + retry_after_ms))
        return _reply(200, receipt)

    def _append_tombstone(self, topic: str, partition: int, key: bytes) -> int:
        batch = build_batch([Record(0, self.clock.time_ms(), key, None)], base_offset=0)
        return self.replica_manager.append(topic, partition, batch).first_offset

    @staticmethod
    def _why_not_gone(log: UnifiedLog, tombstone_offset: int, older: list[Any], compaction: dict[str, Any],
                      now_ms: int) -> tuple[str, int]:
        config = log.config
        segments = log.segments()
        holding = [s for s in segments if s.base_offset <= tombstone_offset]
        newest_ms = holding[-1].largest_timestamp if holding else now_ms
        lag_left_ms = newest_ms + config.min_compaction_lag_ms - now_ms
        if lag_left_ms > 0:
            return (f"min.compaction.lag.ms={config.min_compaction_lag_ms} holds the tombstone's segment (its newest "
                    f"record is {now_ms - newest_ms} ms old): {len(older)} older record(s) of the key stay on disk "
                    f"until it may be cleaned, in {lag_left_ms} ms", lag_left_ms)
        if all(r.file.endswith(".deleted") for r in older):
            return (f"the older record(s) of the key are only in segments renamed .deleted, which are unlinked "
                    f"file.delete.delay.ms={config.file_delete_delay_ms} after the round", config.file_delete_delay_ms)
        results = compaction.get("results") or [{}]
        status, error = results[0].get("status", "pending"), results[0].get("error")
        return (f"the compaction round ended {status}" + (f" ({error})" if error else "")
                + f"; {len(older)} older record(s) of the key are still on disk", _RETRY_MS)
