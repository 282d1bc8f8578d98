"""Log-cleaner throughput of minikafka vs. Apache Kafka on the very same segment bytes.

    .venv/bin/python -m bench.cleaner_throughput [--records N] [--key-space K] [--value-bytes B[,B...]]
        [--tombstone-percent P] [--segment-bytes S] [--repeat R] [--only apache|minikafka]
        [--segments-dir DIR] [--profile FILE] [--no-kafka-warmup] [--no-record] [--note TEXT]
        [--records-per-batch N] [--compression none|lz4[,...]] [--shapes]

Per value size: a deterministic data set (N records over K keys, `--tombstone-percent` of them tombstones) is
produced with confluent-kafka into a single-partition topic of a real Apache Kafka node (bench/apache_kafka.py)
created with `cleanup.policy=delete` and a small `segment.bytes`, so nothing is cleaned while producing. The
partition's segment files are then copied (they are the data set for minikafka, byte for byte) and the topic is
switched to `cleanup.policy=compact` with `min.cleanable.dirty.ratio=0.01`: Kafka's single cleaner thread then
runs one round over every closed segment. Its statistics block (spec §3.2), read from the cleaner loggers' own
log file, gives messages and bytes; seconds come from the log timestamps. The same data goes into a warm-up
topic cleaned first (so the JIT has compiled the cleaner, as in a long-running broker) and into `--repeat`
measured topics; the fastest round counts. Kafka is stopped, then minikafka's `Cleaner.clean` runs `--repeat`
times in this process, one thread, on the copied segments with the same range (active segment excluded), the
same 128 MiB dedupe buffer and load factor 0.9; the fastest round counts.

Batch shape: by default the producer batches as it likes (linger.ms=20, batch.size=1 MB: ~8.5k records of 100 B,
~950 of 1 KiB). `--records-per-batch N` makes every batch N records (librdkafka batch.num.messages=N, with
batch.size, message.max.bytes and the topic's max.message.bytes raised to fit, and a linger long enough to fill
it), and `--compression` sets the producer's codec (the topic keeps it: compression.type=producer). `--shapes`
runs the issue-14 matrix at a modest size: values 100 B and 1 KiB x batches of 8,000, 200 and 1 record(s) x none
and lz4 (`--records` records per data set, a fifth of them for 1-record batches; keys = records / 10; segments
sized to hold two batches, at least 1 MiB).

Printed and appended to bench/results/ (results.jsonl, HISTORY.md): records/s and MB/s per cleaner thread
for both, their ratios, the measured records per batch of the segments, and offset-map keys per MiB (ours from
OffsetMap.capacity, Kafka's 0.9 x 2^20 / 24).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tests.apache_kafka as apache_kafka
from bench.machine import machine_description
from bench.results_log import HISTORY_MD, RESULTS_FILE, BenchResult, append_history, append_results, result
from minikafka.cleaner.cleaner import Cleaner
from minikafka.cleaner.offset_map import KAFKA_SLOT_BYTES, OffsetMap
from minikafka.protocol.records import iter_batches
from minikafka.storage.clock import SystemClock
from minikafka.storage.log_segment import LogSegment
from tests.apache_kafka import ApacheKafka
from tests.kafka_jars import KAFKA_VERSION

BENCHMARKS_MD = HISTORY_MD  # the Markdown write-ups; the figures go to bench/results/results.jsonl
TOPIC = "cleaner-bench"
WARMUP_TOPIC = "cleaner-bench-warmup"
DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024
LOAD_FACTOR = 0.9
MIB = 1024 * 1024
KAFKA_CLEAN_TIMEOUT_S = 600.0

# Appended to the harness's log4j2 config: Kafka 4.x's cleaner loggers (storage module, Java: `Cleaner` logs the
# round's steps, `LogCleaner$CleanerThread` the statistics block) also write to a file of their own,
# `<server.log>-cleaner`, which this script parses.
_CLEANER_LOG4J2 = """appender.cleaner.type = File
appender.cleaner.name = CLEANER
appender.cleaner.fileName = {log_file}-cleaner
appender.cleaner.layout.type = PatternLayout
appender.cleaner.layout.pattern = [%d] %p %m (%c)%n
logger.cleaner.name = org.apache.kafka.storage.internals.log.Cleaner
logger.cleaner.level = info
logger.cleaner.appenderRef.cleaner.ref = CLEANER
logger.cleanerthread.name = org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread
logger.cleanerthread.level = info
logger.cleanerthread.appenderRef.cleaner.ref = CLEANER
"""


@dataclass(frozen=True)
class DataSet:
    records: int
    key_space: int
    value_bytes: int
    tombstone_percent: float
    records_per_batch: int | None = None  # None: as many as the producer's default batching gives
    compression: str = "none"
    seed: int = 42

    @property
    def label(self) -> str:
        shape = "" if self.records_per_batch is None else f", {self.records_per_batch:,} rec/batch"
        codec = "" if self.compression == "none" else f", {self.compression}"
        return (f"{self.records:,} records, {self.key_space:,} keys, {self.value_bytes} B values, "
                f"{self.tombstone_percent:g}% tombstones{shape}{codec}")

    @property
    def batch_bytes_estimate(self) -> int:
        """Upper estimate of one batch's uncompressed size (61 B header; key, value and ~12 B per record)."""
        return 61 + (self.records_per_batch or 10_000) * (self.value_bytes + 13 + 12)

    def producer_config(self) -> dict[str, Any]:
        """librdkafka settings that give batches of `records_per_batch` records (or the bench's old default)."""
        config: dict[str, Any] = {"compression.type": self.compression}
        if self.records_per_batch is None:
            return {**config, "linger.ms": 20, "batch.size": 1_000_000}
        batch_size = max(1_000_000, 2 * self.batch_bytes_estimate)
        return {**config, "batch.num.messages": self.records_per_batch, "batch.size": batch_size,
                "message.max.bytes": batch_size + MIB, "linger.ms": 1000 if self.records_per_batch > 1 else 0}

    def stored_bytes_per_record(self) -> float:
        """Bytes per record in a segment: the first batch built and, for lz4, compressed here (values repeat
        slices of one random pool, so lz4 shrinks many-record batches 5-17x)."""
        per_batch = self.records_per_batch or 10_000
        if self.compression != "lz4":
            return self.batch_bytes_estimate / per_batch
        import lz4.frame

        keys, values = replace(self, records=per_batch).generate()
        raw = b"".join(key + (value or b"") + bytes(12) for key, value in zip(keys, values))
        return (61 + len(lz4.frame.compress(raw))) / per_batch

    @property
    def max_message_bytes(self) -> int:
        return max(2_000_000, int(self.producer_config().get("message.max.bytes", 0)))

    def generate(self) -> tuple[list[bytes], list[bytes | None]]:
        rng = random.Random(self.seed)
        pool = rng.randbytes(self.value_bytes + 4096)
        keys: list[bytes] = []
        values: list[bytes | None] = []
        tombstone_cut = self.tombstone_percent / 100.0
        for i in range(self.records):
            keys.append(b"key-%09d" % rng.randrange(self.key_space))
            if rng.random() < tombstone_cut:
                values.append(None)
            elif self.compresses_alone:
                # 16 random bytes repeated: a one-record batch that lz4 shrinks, so the producer compresses it.
                values.append((rng.randbytes(16) * (self.value_bytes // 16 + 1))[: self.value_bytes])
            else:
                start = (i * 7919) % 4096
                values.append(pool[start : start + self.value_bytes])
        return keys, values

    @property
    def compresses_alone(self) -> bool:
        """Compressed one-record batches: librdkafka sends a batch uncompressed when compressing does not shrink
        it, and one slice of the random pool does not shrink, so these values must compress on their own."""
        return self.compression != "none" and self.records_per_batch == 1


@dataclass(frozen=True)
class CleanRun:
    """One cleaning round's numbers: messages and bytes read by the recopy pass, wall seconds."""

    messages_read: int
    bytes_read: int
    messages_written: int
    bytes_written: int
    seconds: float
    index_seconds: float
    detail: str

    @property
    def records_per_s(self) -> float:
        return self.messages_read / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mb_per_s(self) -> float:
        return self.bytes_read / MIB / self.seconds if self.seconds > 0 else float("nan")


# ----------------------------------------------------------------------------------------------- Apache Kafka
_STATS = re.compile(
    r"^\[(?P<ts>[\d\- :,]+)\] INFO .*\n"
    r"\tLog cleaner thread \d+ cleaned log (?P<tp>\S+) \(dirty section = \[(?P<first>\d+), (?P<end>\d+)\]\)\n"
    r"\t(?P<read_mb>[\d,.]+) MB of log processed in (?P<secs>[\d,.]+) seconds \((?P<mbps>[\d,.]+) MB/sec\)\.\n"
    r"\tIndexed (?P<map_mb>[\d,.]+) MB in (?P<index_secs>[\d,.]+) seconds.*\n"
    r"(?:.*\n)*?"
    r"\tStart size: [\d,.]+ MB \((?P<read_msgs>[\d,]+) messages\)\n"
    r"\tEnd size: (?P<written_mb>[\d,.]+) MB \((?P<written_msgs>[\d,]+) messages\)(?:\n\t.*% size reduction.*)?",
    re.MULTILINE,
)
_BEGIN = re.compile(r"^\[(?P<ts>[\d\- :,]+)\] INFO .*Beginning cleaning of log (?P<tp>\S+?)\.?\s", re.MULTILINE)


def _log_time_s(stamp: str) -> float:
    return datetime.strptime(stamp.strip(), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_kafka_stats(text: str, topic_partition: str) -> CleanRun | None:
    """The first stats block for `topic_partition` in a LogCleaner log (seconds from the log timestamps, which
    have millisecond resolution, rather than the block's 0.1 s figure)."""
    for match in _STATS.finditer(text):
        if match["tp"] != topic_partition:
            continue
        end_s = _log_time_s(match["ts"])
        begins = [_log_time_s(b["ts"]) for b in _BEGIN.finditer(text, 0, match.start()) if b["tp"] == topic_partition]
        seconds = end_s - begins[-1] if begins else _number(match["secs"])
        return CleanRun(
            messages_read=int(_number(match["read_msgs"])),
            bytes_read=int(_number(match["read_mb"]) * MIB),
            messages_written=int(_number(match["written_msgs"])),
            bytes_written=int(_number(match["written_mb"]) * MIB),
            seconds=seconds,
            index_seconds=_number(match["index_secs"]),
            detail=match.group(0).split("\n", 1)[1].replace("\t", "    "),
        )
    return None


def run_apache(data: DataSet, segment_bytes: int, segments_dir: Path, work: Path, no_warmup: bool = False,
               rounds: int = 1) -> CleanRun:
    """Produce `data` into Kafka (a warm-up topic and `rounds` measured topics), copy the first measured
    partition's .log files to `segments_dir`, then let Kafka clean one topic after another; the fastest
    measured round is returned."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    if _CLEANER_LOG4J2 not in apache_kafka.SERVER_LOG4J2:
        apache_kafka.SERVER_LOG4J2 += _CLEANER_LOG4J2
    properties = {
        "log.cleaner.threads": "1",
        "log.cleaner.backoff.ms": "100",
        "log.cleaner.dedupe.buffer.size": str(DEDUPE_BUFFER_BYTES),
        "log.cleaner.io.buffer.load.factor": str(LOAD_FACTOR),
        "log.flush.interval.messages": str(2**62),
    }
    with ApacheKafka(work, heap="1g", properties=properties) as kafka:
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        topic_config = {
            "cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1",
            "segment.bytes": str(segment_bytes), "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0", "delete.retention.ms": "86400000",
            "max.message.bytes": str(data.max_message_bytes),
        }
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=topic_config)])[TOPIC].result(60)
        keys, values = data.generate()
        producer = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "1",
                             "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False,
                             **data.producer_config()})
        measured = [TOPIC] + [f"{TOPIC}-{i}" for i in range(2, rounds + 1)]
        topics = measured if no_warmup else [WARMUP_TOPIC, *measured]
        if not no_warmup:
            admin.create_topics([NewTopic(WARMUP_TOPIC, 1, 1, config=topic_config)])[WARMUP_TOPIC].result(60)
        for topic in measured[1:]:
            admin.create_topics([NewTopic(topic, 1, 1, config=topic_config)])[topic].result(60)
        for topic in topics:
            start = time.perf_counter()
            _produce_all(producer, topic, keys, values)
            print(f"  produced {data.records:,} records to Apache Kafka {topic} in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        del producer
        partition_dir = kafka.log_dir / f"{TOPIC}-0"
        if len(list(partition_dir.glob("*.log"))) < 2:
            raise RuntimeError(f"all of {TOPIC}-0 is in its active segment, which is never cleaned: raise --records "
                               "or lower --segment-bytes")
        segments_dir.mkdir(parents=True, exist_ok=True)
        for path in sorted(partition_dir.glob("*.log")):
            shutil.copyfile(path, segments_dir / path.name)
        cleaner_log = Path(f"{kafka.server_log}-cleaner")
        best: CleanRun | None = None
        for topic in topics:  # the warm-up round lets the JIT compile the cleaner, as in a long-running broker
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
                ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
            admin.incremental_alter_configs([resource])[resource].result(60)
            run = _wait_for_stats(cleaner_log, f"{topic}-0")
            if topic != WARMUP_TOPIC:
                print(f"  Apache Kafka round on {topic}: {run.records_per_s:,.0f} rec/s, {run.seconds:.2f} s",
                      flush=True)
                if best is None or run.seconds < best.seconds:
                    best = run
        del admin
        assert best is not None
        return best


def _produce_all(producer: Any, topic: str, keys: list[bytes], values: list[bytes | None]) -> None:
    produce = producer.produce
    for key, value in zip(keys, values):
        while True:
            try:
                produce(topic, value, key, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("confluent-kafka could not deliver every record")


def _wait_for_stats(cleaner_log: Path, topic_partition: str) -> CleanRun:
    deadline = time.monotonic() + KAFKA_CLEAN_TIMEOUT_S
    while time.monotonic() < deadline:
        text = cleaner_log.read_text(errors="replace") if cleaner_log.exists() else ""
        run = parse_kafka_stats(text, topic_partition)
        if run is not None:
            return run
        time.sleep(0.5)
    raise RuntimeError(f"no cleaner statistics for {topic_partition} in {cleaner_log} after {KAFKA_CLEAN_TIMEOUT_S} s")


# ----------------------------------------------------------------------------------------------- minikafka
@dataclass(frozen=True)
class _TopicConfig:
    segment_bytes: int
    segment_index_bytes: int = 10 * MIB
    index_interval_bytes: int = 4096
    delete_retention_ms: int = 86_400_000


def load_segments(source_dir: Path, log_dir: Path) -> list[LogSegment]:
    """Our segments (with our indexes) holding exactly the batches of the Kafka `.log` files in `source_dir`."""
    log_dir.mkdir(parents=True, exist_ok=True)
    segments = []
    for path in sorted(source_dir.glob("*.log")):
        segment = LogSegment(log_dir, int(path.name.split(".")[0]))
        data = path.read_bytes()
        chunk_start = 0
        last_offset, max_timestamp, offset_of_max = -1, -1, -1
        position = 0
        for batch in iter_batches(data):
            if batch.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = batch.max_timestamp, batch.last_offset
            last_offset = batch.last_offset
            position = batch.position + batch.size_bytes
            if position - chunk_start >= 4 * MIB:
                segment.append(memoryview(data)[chunk_start:position], last_offset, max_timestamp, offset_of_max)
                chunk_start, max_timestamp = position, -1
        if position > chunk_start:
            segment.append(memoryview(data)[chunk_start:position], last_offset, max_timestamp, offset_of_max)
        segments.append(segment)
    for segment in segments[:-1]:
        segment.on_becoming_inactive()
        segment.flush()
    return segments


def run_minikafka(segments_dir: Path, work: Path, segment_bytes: int, profile: Path | None = None) -> CleanRun:
    segments = load_segments(segments_dir, work / f"{TOPIC}-0")
    config = _TopicConfig(segment_bytes=segment_bytes)
    clock = SystemClock()
    cleaner = Cleaner(OffsetMap(DEDUPE_BUFFER_BYTES, LOAD_FACTOR), clock)
    first_uncleanable = segments[-1].base_offset

    def clean() -> CleanRun:
        start = time.perf_counter()
        result = cleaner.clean(segments, first_dirty_offset=0, first_uncleanable_offset=first_uncleanable,
                               now_ms=clock.time_ms(), config=config)
        seconds = time.perf_counter() - start
        stats = result.stats
        for group in result.groups:  # discard the output: the next run starts from the same input
            group.cleaned.close()
            group.cleaned.delete()
        return CleanRun(stats.messages_read, stats.bytes_read, stats.messages_written, stats.bytes_written,
                        seconds, stats.elapsed_index_secs,
                        stats.format(0, f"{TOPIC}-0", 0, result.end_offset).strip("\n").replace("\t", "    "))

    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        run = profiler.runcall(clean)
        profiler.dump_stats(profile)
        return run
    return clean()


# ----------------------------------------------------------------------------------------------- report
def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or value != value else f"{value:,.{digits}f}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or not theirs or ours != ours or theirs != theirs:
        return "-"
    return f"{ours / theirs:.2f}x"


def keys_per_mib() -> tuple[float, float]:
    ours = OffsetMap(MIB, LOAD_FACTOR).capacity
    kafka = LOAD_FACTOR * MIB / KAFKA_SLOT_BYTES
    return float(ours), kafka


def batch_shape(segments_dir: Path) -> tuple[float, str]:
    """Mean records per batch of the `.log` files in `segments_dir` (before cleaning), and their codecs."""
    batches = records = 0
    codecs: set[str] = set()
    for path in sorted(segments_dir.glob("*.log")):
        for batch in iter_batches(path.read_bytes()):
            batches += 1
            records += batch.last_offset - batch.base_offset + 1
            codecs.add(batch.compression_type.name.lower())
    return (records / batches if batches else float("nan")), ",".join(sorted(codecs)) or "-"


Result = tuple[DataSet, CleanRun | None, CleanRun | None, tuple[float, str]]


def table(results: list[Result]) -> str:
    lines = ["| data set | rec/batch (codec) | Apache rec/s | Apache MB/s | minikafka rec/s | minikafka MB/s "
             "| ratio rec/s | ratio MB/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for data, apache, ours, (per_batch, codecs) in results:
        a_rec = apache.records_per_s if apache else None
        a_mb = apache.mb_per_s if apache else None
        o_rec = ours.records_per_s if ours else None
        o_mb = ours.mb_per_s if ours else None
        lines.append(f"| {data.label} | {_fmt(per_batch, 1)} ({codecs}) | {_fmt(a_rec, 0)} | {_fmt(a_mb)} | "
                     f"{_fmt(o_rec, 0)} | {_fmt(o_mb)} | "
                     f"{_ratio(o_rec, a_rec)} | {_ratio(o_mb, a_mb)} |")
    ours_kpm, kafka_kpm = keys_per_mib()
    lines.append("")
    lines.append(f"Offset-map keys per MiB (load factor {LOAD_FACTOR}): minikafka {ours_kpm:,.0f}, "
                 f"Apache Kafka {kafka_kpm:,.0f} (24 B/entry): {ours_kpm / kafka_kpm:.2f}x")
    return "\n".join(lines)


def record(command: str, rendered: str, details: list[str], notes: list[str], repeat: int) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = [f"\n## Log cleaner throughput, {stamp}\n",
               f"- command: `{command}` (from the repo root, with `.venv/bin/python`)",
               f"- machine: {machine_description()}; the 2 CPUs are shared with other engineers' work "
               f"(load average at start {os.getloadavg()[0]:.1f}), so absolute numbers are noisy: compare ratios",
               f"- Apache Kafka {KAFKA_VERSION}, one KRaft node, -Xmx1g, log.cleaner.threads=1, 128 MiB dedupe "
               "buffer, load factor 0.9; minikafka Cleaner.clean in one thread on a byte-for-byte copy of Kafka's "
               "segments, same range (active segment excluded), same map memory",
               f"- per cleaner thread, fastest of {repeat} rounds on each side; "
               "records/s = messages read by the recopy pass / round seconds, "
               "MB/s = bytes read by the recopy pass / round seconds (Kafka: seconds from its log timestamps, "
               "'Beginning cleaning' to the statistics block)",
               *[f"- {note}" for note in notes], "", rendered, "", "<details><summary>statistics blocks</summary>",
               "", "```", *details, "```", "</details>", ""]
    append_history("\n".join(section))


def cleaner_results(results: list[Result], command: str) -> list[BenchResult]:
    """records/s per thread of every data set against Kafka's, and the map density, for results.jsonl."""
    figures = []
    for data, apache, ours, (per_batch, codecs) in results:
        if ours is None:
            continue
        goal = "cleaner-shapes" if "--shapes" in command else "cleaner-throughput"
        figures.append(result(goal, f"records/s per thread, {data.label}", ours.records_per_s, "records/s",
                              apache.records_per_s if apache else None, command=command,
                              note=f"{per_batch:,.1f} records per batch ({codecs})"))
    ours_kpm, kafka_kpm = keys_per_mib()
    figures.append(result("offset-map-density", f"offset-map keys per MiB (load factor {LOAD_FACTOR})", ours_kpm,
                          "keys/MiB", kafka_kpm, command=command))
    return figures


SHAPE_VALUE_BYTES = (100, 1024)
SHAPE_RECORDS_PER_BATCH = (8000, 200, 1)
SHAPE_COMPRESSIONS = ("none", "lz4")
SHAPE_MIN_SEGMENTS = 6


def data_sets(args: argparse.Namespace) -> list[tuple[DataSet, int]]:
    """(data set, segment.bytes) per run: `--shapes`' matrix, or each `--value-bytes` x `--compression`."""
    if args.shapes:
        records = args.records or 100_000
        combos = [(value, per_batch, codec) for value in SHAPE_VALUE_BYTES for per_batch in SHAPE_RECORDS_PER_BATCH
                  for codec in SHAPE_COMPRESSIONS]
    else:
        records = args.records or 1_000_000
        combos = [(int(value), args.records_per_batch, codec) for value in args.value_bytes.split(",")
                  for codec in args.compression.split(",")]
    sets = []
    for value_bytes, per_batch, codec in combos:
        count = records // 5 if args.shapes and per_batch == 1 else records  # one Produce request per record
        data = DataSet(count, args.key_space or max(1, count // 10), value_bytes, args.tombstone_percent, per_batch,
                       codec)
        if args.segment_bytes is not None:
            segment_bytes = args.segment_bytes
        elif args.shapes:
            per_record = data.stored_bytes_per_record()
            segment_bytes = max(MIB, int(2 * per_record * (per_batch or 1)))
            # at least SHAPE_MIN_SEGMENTS segments, so the active one (never cleaned) is a small part of the data
            count = max(count, int(SHAPE_MIN_SEGMENTS * segment_bytes / per_record))
            data = replace(data, records=count, key_space=args.key_space or max(1, count // 10))
        else:
            segment_bytes = max(16 * MIB, 2 * data.batch_bytes_estimate if per_batch else 0)
        sets.append((data, segment_bytes))
    return sets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cleaner_throughput", description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=None, help="default 1,000,000 (100,000 with --shapes)")
    parser.add_argument("--key-space", type=int, default=None, help="default records / 10")
    parser.add_argument("--value-bytes", default="100,1024", help="comma-separated value sizes")
    parser.add_argument("--tombstone-percent", type=float, default=5.0)
    parser.add_argument("--segment-bytes", type=int, default=None,
                        help="topic segment.bytes (default 16 MiB; with --shapes, two batches' worth, >= 1 MiB)")
    parser.add_argument("--records-per-batch", type=int, default=None,
                        help="records in every produced batch (default: the producer's own batching)")
    parser.add_argument("--compression", default="none", help="comma-separated producer codecs: none, lz4, ...")
    parser.add_argument("--shapes", action="store_true",
                        help="the issue-14 matrix: 100 B and 1 KiB values x 8,000/200/1 records per batch x none/lz4 "
                        "(--records defaults to 100,000 here)")
    parser.add_argument("--only", choices=["apache", "minikafka"], default=None)
    parser.add_argument("--segments-dir", type=Path, default=None,
                        help="keep the copied segments here; with --only minikafka, reuse them if present")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of minikafka's round here")
    parser.add_argument("--repeat", type=int, default=3,
                        help="measured rounds per data set and broker (Kafka: one topic each); the fastest is kept")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--no-kafka-warmup", action="store_true",
                        help="measure Kafka's first round in a fresh JVM (no warm-up topic cleaned first)")
    parser.add_argument("--note", action="append", default=[], help="extra line for the write-up in HISTORY.md")
    args = parser.parse_args(argv)
    command = "python -m bench.cleaner_throughput " + shlex.join(sys.argv[1:] if argv is None else argv)
    results: list[Result] = []
    details: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cleaner-bench-") as tmp:
        for data, segment_bytes in data_sets(args):
            print(f"{data.label}, segment.bytes {segment_bytes:,}", flush=True)
            slug = f"v{data.value_bytes}" + (f"-b{data.records_per_batch}" if data.records_per_batch else "") + (
                f"-{data.compression}" if data.compression != "none" else "")
            work = Path(tmp) / slug
            segments_dir = (args.segments_dir or work) / f"{slug}-segments"
            have_segments = args.segments_dir is not None and any(segments_dir.glob("*.log"))
            apache = ours = None
            if args.only != "minikafka" or not have_segments:
                shutil.rmtree(segments_dir, ignore_errors=True)
                apache = run_apache(data, segment_bytes, segments_dir, work / "apache", args.no_kafka_warmup,
                                    args.repeat)
                print(f"  Apache Kafka: {apache.records_per_s:,.0f} rec/s, {apache.mb_per_s:,.1f} MB/s "
                      f"({apache.messages_read:,} messages, {apache.seconds:.2f} s)", flush=True)
                details += [f"Apache Kafka, {data.label}:", apache.detail, ""]
            if args.only != "apache":
                for attempt in range(args.repeat):
                    run = run_minikafka(segments_dir, work / f"minikafka-{attempt}", segment_bytes,
                                        args.profile)
                    shutil.rmtree(work / f"minikafka-{attempt}", ignore_errors=True)
                    print(f"  minikafka: {run.records_per_s:,.0f} rec/s, {run.mb_per_s:,.1f} MB/s "
                          f"({run.messages_read:,} messages, {run.seconds:.2f} s)", flush=True)
                    if ours is None or run.seconds < ours.seconds:
                        ours = run
                assert ours is not None
                details += [f"minikafka, {data.label}:", ours.detail, ""]
            if apache and ours and apache.messages_read != ours.messages_read:
                print(f"  note: Kafka's fastest round read {apache.messages_read:,} messages, minikafka "
                      f"{ours.messages_read:,} (same records; the measured topics' active segments can start at "
                      "slightly different offsets)", file=sys.stderr)
            shape = batch_shape(segments_dir)
            print(f"  segments: {shape[0]:,.1f} records per batch ({shape[1]})", flush=True)
            results.append((data, apache, ours, shape))
            shutil.rmtree(work / "apache", ignore_errors=True)
    rendered = table(results)
    print(rendered)
    if not args.no_record:
        record(command, rendered, details, args.note, args.repeat)
        append_results(cleaner_results(results, command))
        print(f"appended to {BENCHMARKS_MD} and {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
