"""Options for Spark's Kafka source (`spark-sql-kafka-0-10`), shared by the snapshot and audit jobs."""

from __future__ import annotations

from collections.abc import Mapping

# The connector's own row schema, plus headers (includeHeaders=true); the snapshot table keeps these columns.
RECORD_COLUMNS = ("key", "value", "partition", "offset", "timestamp", "headers")


def kafka_source_options(
    bootstrap_servers: str,
    topic: str,
    *,
    starting_offsets: str = "earliest",
    kafka_options: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Read one topic from `starting_offsets`, committed records only, headers included.

    `failOnDataLoss` stays true: compaction never moves the log start offset, so a gap the cleaner made is skipped
    silently, and a real loss (the topic deleted and recreated, retention passing the checkpoint) fails the job.
    `kafka_options` are passed through (`kafka.security.protocol`, `maxOffsetsPerTrigger`, ...) and win.
    """
    options = {
        "kafka.bootstrap.servers": bootstrap_servers,
        "subscribe": topic,
        "startingOffsets": starting_offsets,
        "includeHeaders": "true",
        "kafka.isolation.level": "read_committed",
        "failOnDataLoss": "true",
    }
    options.update(kafka_options or {})
    return options
