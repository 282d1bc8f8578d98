"""Statistics of one cleaning round (Kafka's CleanerStats, spec §2.10) and its log text (§3.2)."""

from __future__ import annotations

from dataclasses import dataclass

_MIB = 1024.0 * 1024.0


@dataclass(slots=True)
class CleanerStats:
    """Counters of one round. Owned by the thread running the round; read by metrics afterwards."""

    start_ms: int = 0
    map_complete_ms: int = -1
    end_ms: int = -1
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages_read: int = 0
    buffer_utilization: float = 0.0

    @property
    def elapsed_secs(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0

    @property
    def elapsed_index_secs(self) -> float:
        return (self.map_complete_ms - self.start_ms) / 1000.0

    def format(self, thread_id: int, topic_partition: str, first_dirty_offset: int, end_offset: int) -> str:
        """Kafka's per-round INFO block (LogCleaner.recordStats), numbers formatted as Kafka does."""

        def mb(n: float) -> float:
            return n / _MIB

        def per_sec(n: float, secs: float) -> float:
            return n / secs if secs > 0 else 0.0

        def pct(part: float, whole: float) -> float:
            return 100.0 * part / whole if whole > 0 else 0.0

        total, index = self.elapsed_secs, self.elapsed_index_secs
        clean = total - index
        read, written = float(self.bytes_read), float(self.bytes_written)
        size_reduction = 100.0 * (1.0 - written / read) if read > 0 else 0.0
        message_reduction = (
            100.0 * (1.0 - self.messages_written / self.messages_read) if self.messages_read > 0 else 0.0
        )
        lines = [
            "",
            f"\tLog cleaner thread {thread_id} cleaned log {topic_partition} "
            f"(dirty section = [{first_dirty_offset}, {end_offset}])",
            f"\t{mb(read):,.1f} MB of log processed in {total:,.1f} seconds ({mb(per_sec(read, total)):,.1f} MB/sec).",
            f"\tIndexed {mb(self.map_bytes_read):,.1f} MB in {index:.1f} seconds "
            f"({mb(per_sec(self.map_bytes_read, index)):,.1f} Mb/sec, {pct(index, total):.1f}% of total time)",
            f"\tBuffer utilization: {100.0 * self.buffer_utilization:.1f}%",
            f"\tCleaned {mb(read):,.1f} MB in {clean:.1f} seconds "
            f"({mb(per_sec(read, clean)):,.1f} Mb/sec, {pct(clean, total):.1f}% of total time)",
            f"\tStart size: {mb(read):,.1f} MB ({self.messages_read:,} messages)",
            f"\tEnd size: {mb(written):,.1f} MB ({self.messages_written:,} messages)",
            f"\t{size_reduction:.1f}% size reduction ({message_reduction:.1f}% fewer messages)",
        ]
        if self.invalid_messages_read:
            lines.append(f"\tFound {self.invalid_messages_read} invalid messages during compaction.")
        return "\n".join(lines)
