"""What a compacted partition must look like after a `kill -9` and a restart, for the crash benchmarks.

`CompactedLogModel` is the reference model of one compacted partition that `bench.cleaner_crash` and
`bench.kill_loop` share. The caller tells it every write before the write is sent (`record_write`) and every
acknowledgement (`record_ack`); after each restart it gets the whole partition as read from offset 0 and says what
is wrong with it (`check`):

- per key, versions strictly increase with the offset (a duplicate or an older value after a newer one is wrong);
- no acknowledged latest value is lost: the last record read for a key has a version >= the highest acknowledged
  one, or the key is gone and a tombstone with a version >= that one was written (tombstones are removed after
  `delete.retention.ms`);
- nothing cleaned away comes back: every (key, version) read was read at the previous check too or was written
  since (the model cannot tell "not yet cleaned" from "cleaned", so it compares reads: once absent, always absent);
- with the `cleaner-offset-checkpoint` offset given, the cleaned prefix below it holds each key at most once (read
  the checkpoint before the partition: cleaning only removes records, so the prefix stays deduplicated).

Versions are integers that grow over the whole run (never reused) and keys are strings; the caller encodes both
in its records. Not thread-safe: the caller serialises calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple


class CompactedRecord(NamedTuple):
    offset: int
    key: str
    version: int
    tombstone: bool


@dataclass
class CompactedLogModel:
    """Acknowledged and written (key, version) pairs of one compacted partition, and the last check's read."""

    name: str
    acked: dict[str, int] = field(default_factory=dict)  # key -> highest acknowledged version
    tombstones_written: dict[str, int] = field(default_factory=dict)  # key -> highest tombstone version that may land
    written_since_check: set[tuple[str, int]] = field(default_factory=set)
    previous_present: set[tuple[str, int]] | None = None
    acks: int = 0

    def record_write(self, key: str, version: int, tombstone: bool) -> None:
        """Before the record is sent: it may land in the log even if it is never acknowledged."""
        self.written_since_check.add((key, version))
        if tombstone:
            self.record_tombstone(key, version)

    def record_tombstone(self, key: str, version: int) -> None:
        """A tombstone that may have landed (for a transaction: once it is known to have committed)."""
        if version > self.tombstones_written.get(key, -1):
            self.tombstones_written[key] = version

    def record_ack(self, key: str, version: int) -> None:
        self.acks += 1
        if version > self.acked.get(key, -1):
            self.acked[key] = version

    def check(self, records: list[CompactedRecord], cleaned_up_to: int | None = None,
              label: str = "") -> list[str]:
        """The violations in `records` (the whole partition in offset order); then the read becomes the previous one."""
        where = f"{label}{self.name}"
        failures: list[str] = []
        last: dict[str, CompactedRecord] = {}
        for record in records:
            before = last.get(record.key)
            if before is not None and record.version <= before.version:
                failures.append(f"{where}: key {record.key} version {record.version} at offset {record.offset} "
                                f"after version {before.version} at offset {before.offset}")
            last[record.key] = record
        for key, version in self.acked.items():
            found = last.get(key)
            if found is None:
                if self.tombstones_written.get(key, -1) < version:
                    failures.append(f"{where}: key {key} acknowledged version {version} lost (key absent, no "
                                    f"later tombstone written)")
            elif found.version < version:
                failures.append(f"{where}: key {key} acknowledged version {version} lost: latest read is version "
                                f"{found.version} at offset {found.offset}")
        present = {(r.key, r.version) for r in records}
        if self.previous_present is not None:
            back = present - self.previous_present - self.written_since_check
            if back:
                offsets = {(r.key, r.version): r.offset for r in records}
                examples = ", ".join(f"key {k} version {v} at offset {offsets[(k, v)]}" for k, v in sorted(back)[:5])
                failures.append(f"{where}: {len(back)} records absent at the previous check reappeared, e.g. "
                                f"{examples}")
        if cleaned_up_to is not None:
            seen: dict[str, CompactedRecord] = {}
            for record in records:
                if record.offset >= cleaned_up_to:
                    break
                first = seen.setdefault(record.key, record)
                if first is not record:
                    failures.append(f"{where}: superseded record in the cleaned prefix (< {cleaned_up_to}): key "
                                    f"{record.key} version {first.version} at offset {first.offset} kept beside "
                                    f"version {record.version} at offset {record.offset}")
        self.previous_present = present
        self.written_since_check = set()
        return failures


def read_cleaner_checkpoint(data_dir: Path, topic: str, partition: int) -> int | None:
    """The `cleaner-offset-checkpoint` entry of one partition (Kafka's text format), None when absent."""
    path = data_dir / "cleaner-offset-checkpoint"
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == str(partition):
            return int(parts[2])
    return None


def killed_inside_cleaning_round(log_text: str) -> bool:
    """Whether the broker log (the part written since the last start) ends inside a cleaning round: a
    "Beginning cleaning" line with no statistics block ("cleaned log") after it."""
    last_begin = log_text.rfind("Beginning cleaning of log")
    return last_begin >= 0 and "cleaned log" not in log_text[last_begin:]
