"""`minikafka audit`: read a whole topic on Spark and check, exactly, what compaction guarantees.

Rules, per partition (all computed with exact aggregations and windows, so any key count works):
- `offset_order`: offsets strictly increase in the order the partition is read.
- `duplicate_below_checkpoint`: below the cleaner checkpoint (the broker's `GET /admin/cleaner-state`) a key has
  at most one record. Kafka keeps no exception to this for committed records: a cleaned range is deduplicated
  against everything up to the checkpoint. Brokers without the endpoint (Apache Kafka) leave the rule unchecked.
- `overdue_value`: a value superseded by a later record of its key at time T is gone by
  T + `max.compaction.lag.ms` + allowance (DESIGN.md: the deadline is max lag plus one cleaner backoff).
- `overdue_tombstone`: a tombstone written at T is gone by T + `max.compaction.lag.ms` + `delete.retention.ms` +
  allowance (first cleaning stamps its delete horizon, a later round after the horizon drops it).
The allowance is the cleaner's backoff (twice for tombstones: two rounds), the broker's roll-check interval and a
grace for the cleaning itself (`grace_ms`). Both deadline rules need a finite `max.compaction.lag.ms`; without
one Kafka promises no deadline and they are reported as not applicable. Times are the records' timestamps: on a
CreateTime topic a producer's clock skew shifts them (LogAppendTime makes the deadline checks exact).

Records are read committed (aborted ones are not data) from the start up to the end offsets seen after the
checkpoint was read: the checkpoint only moves forward, so anything below it was already deduplicated.

A broker with security configured wants credentials for `/admin/*` (`admin_credentials`, HTTP Basic); a refusal
(401/403) is an error, not "no endpoint".
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from minikafka.broker.admin_client import AdminCredentials, with_credentials
from minikafka.pipeline.kafka_source import kafka_source_options
from minikafka.pipeline.session import build_spark_session
from minikafka.pipeline.topic_configs import describe_topic_configs, is_compacted

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

LONG_MAX = 2**63 - 1
DEFAULT_GRACE_MS = 60_000
DEFAULT_CLEANER_BACKOFF_MS = 15_000  # log.cleaner.backoff.ms default, when the broker does not say
RULES = ("offset_order", "duplicate_below_checkpoint", "overdue_value", "overdue_tombstone")


@dataclass
class Violation:
    rule: str
    partition: int
    offset: int
    key: str | None
    detail: str


@dataclass
class PartitionAudit:
    partition: int
    records: int
    distinct_keys: int
    tombstones: int
    cleaner_checkpoint_offset: int | None
    offset_order_violations: int
    duplicates_below_checkpoint: int
    overdue_values: int
    overdue_tombstones: int


@dataclass
class AuditReport:
    topic: str
    checked_at_ms: int
    ok: bool
    rules: dict[str, str]
    config: dict[str, Any]
    partitions: list[PartitionAudit] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def fetch_cleaner_state(admin_url: str, topic: str, timeout_s: float = 10.0,
                        credentials: AdminCredentials | None = None) -> dict[str, Any] | None:
    """The broker's `GET /admin/cleaner-state` body, or None when the broker has no such endpoint; ValueError
    when the broker refuses the credentials (or wants some)."""
    url = f"{admin_url.rstrip('/')}/admin/cleaner-state?topic={urllib.parse.quote(topic)}"
    request = urllib.request.Request(url, headers=with_credentials({}, credentials))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            state: dict[str, Any] = json.loads(response.read())
            return state
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            hint = " (pass --admin-user/--admin-password)" if error.code == 401 else ""
            raise ValueError(f"the admin port at {admin_url} answered HTTP {error.code} to GET /admin/cleaner-state"
                             f"{hint}") from error
        if error.code == 404 and b"does not exist" in error.read():
            raise ValueError(f"topic {topic} does not exist on the broker at {admin_url}") from error
        return None
    except (OSError, ValueError):
        return None


def _key_text(key: bytes | None) -> str | None:
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(key).decode()


def flag_records(
    records: DataFrame, checkpoints: Mapping[int, int], *, now_ms: int, value_deadline_ms: int | None,
    tombstone_deadline_ms: int | None,
) -> DataFrame:
    """`records` (key, value, partition, offset, timestamp, _seq in read order) with one boolean column per rule."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ts_ms = F.col("timestamp").cast("double") * 1000
    checkpoint = F.lit(None).cast("long")
    for partition, offset in checkpoints.items():
        checkpoint = F.when(F.col("partition") == partition, F.lit(offset)).otherwise(checkpoint)
    read_order = Window.partitionBy("partition").orderBy("_seq")
    key_order = Window.partitionBy("partition", "key").orderBy("offset")
    flagged = (
        records.withColumn("_checkpoint", checkpoint)
        .withColumn("_previous_offset", F.lag("offset").over(read_order))
        .withColumn("_next_offset", F.when(F.col("key").isNotNull(), F.lead("offset").over(key_order)))
        .withColumn("_next_ts_ms", F.when(F.col("key").isNotNull(), F.lead(ts_ms).over(key_order)))
    )
    never = F.lit(False)
    return flagged.select(
        "partition", "offset", "key", "value",
        F.coalesce(F.col("offset") <= F.col("_previous_offset"), never).alias("offset_order"),
        F.coalesce(F.col("_next_offset") < F.col("_checkpoint"), never).alias("duplicate_below_checkpoint"),
        (F.coalesce(F.col("_next_ts_ms") < F.lit(now_ms - value_deadline_ms), never)
         if value_deadline_ms is not None else never).alias("overdue_value"),
        ((F.col("value").isNull() & (ts_ms < F.lit(now_ms - tombstone_deadline_ms)))
         if tombstone_deadline_ms is not None else never).alias("overdue_tombstone"),
    )


def run_audit(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    *,
    admin_url: str | None = None,
    admin_credentials: AdminCredentials | None = None,
    grace_ms: int = DEFAULT_GRACE_MS,
    now_ms: int | None = None,
    kafka_options: Mapping[str, str] | None = None,
    max_violations: int = 20,
) -> AuditReport:
    """Audit `topic`; `report.ok` is False when any rule is broken, and `report.violations` names the first
    `max_violations` offenders (partition, offset, key)."""
    from pyspark.sql import functions as F

    state = fetch_cleaner_state(admin_url, topic, credentials=admin_credentials) if admin_url else None
    configs = describe_topic_configs(bootstrap_servers, topic, kafka_options)
    checked_at_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    max_lag_ms = int(configs.get("max.compaction.lag.ms", LONG_MAX))
    delete_retention_ms = int(configs.get("delete.retention.ms", 86_400_000))
    backoff_ms = int(state["cleaner_backoff_ms"]) if state else DEFAULT_CLEANER_BACKOFF_MS
    roll_check_ms = int(state.get("roll_check_interval_ms", 0)) if state else 0
    checkpoints = {int(p["partition"]): int(p["cleaner_checkpoint_offset"])
                   for p in (state or {}).get("partitions", []) if p["cleaner_checkpoint_offset"] is not None}
    compacted = is_compacted(configs)
    if not compacted:  # no cleaner runs on the topic: its checkpoint and deadlines mean nothing
        checkpoints = {}
    has_deadline = compacted and max_lag_ms < LONG_MAX
    value_deadline = max_lag_ms + backoff_ms + roll_check_ms + grace_ms if has_deadline else None
    tombstone_deadline = (max_lag_ms + delete_retention_ms + 2 * backoff_ms + roll_check_ms + grace_ms
                          if has_deadline else None)
    no_deadline = ("not applicable: max.compaction.lag.ms is not set" if compacted
                   else f"not applicable: cleanup.policy={configs.get('cleanup.policy')}, no compaction guarantee")
    rules = {
        "offset_order": "checked",
        "duplicate_below_checkpoint": no_deadline if not compacted else "checked" if state
        else "not checked: the broker exposes no cleaner checkpoint",
        "overdue_value": f"deadline {value_deadline} ms after being superseded" if has_deadline else no_deadline,
        "overdue_tombstone": f"deadline {tombstone_deadline} ms after being written" if has_deadline else no_deadline,
    }

    options = kafka_source_options(bootstrap_servers, topic, kafka_options=kafka_options)
    options.pop("includeHeaders")
    options["endingOffsets"] = "latest"
    records = (spark.read.format("kafka").options(**options).load()
               .select("key", "value", "partition", "offset", "timestamp")
               .withColumn("_seq", F.monotonically_increasing_id()))
    flagged = flag_records(records, checkpoints, now_ms=checked_at_ms, value_deadline_ms=value_deadline,
                           tombstone_deadline_ms=tombstone_deadline).persist()
    try:
        per_partition = flagged.groupBy("partition").agg(
            F.count("*").alias("records"),
            F.countDistinct("key").alias("distinct_keys"),
            F.sum(F.col("value").isNull().cast("long")).alias("tombstones"),
            *(F.sum(F.col(rule).cast("long")).alias(rule) for rule in RULES),
        ).orderBy("partition").collect()
        any_flag = F.col(RULES[0])
        for rule in RULES[1:]:
            any_flag = any_flag | F.col(rule)
        offenders = flagged.where(any_flag).orderBy("partition", "offset").limit(max_violations).collect()
    finally:
        flagged.unpersist()

    report = AuditReport(topic, checked_at_ms, ok=True, rules=rules, config={
        "max.compaction.lag.ms": max_lag_ms, "delete.retention.ms": delete_retention_ms,
        "cleanup.policy": configs.get("cleanup.policy"),
        "message.timestamp.type": configs.get("message.timestamp.type"),
        "cleaner_backoff_ms": backoff_ms, "grace_ms": grace_ms,
    })
    for row in per_partition:
        report.partitions.append(PartitionAudit(
            partition=int(row["partition"]), records=int(row["records"]), distinct_keys=int(row["distinct_keys"]),
            tombstones=int(row["tombstones"]), cleaner_checkpoint_offset=checkpoints.get(int(row["partition"])),
            offset_order_violations=int(row["offset_order"]),
            duplicates_below_checkpoint=int(row["duplicate_below_checkpoint"]),
            overdue_values=int(row["overdue_value"]), overdue_tombstones=int(row["overdue_tombstone"]),
        ))
    details = {
        "offset_order": "offset not above the previous one read",
        "duplicate_below_checkpoint": "a later record of this key is also below the cleaner checkpoint",
        "overdue_value": "superseded value still present past its deadline",
        "overdue_tombstone": "tombstone still present past its deadline",
    }
    for row in offenders:
        for rule in RULES:
            if row[rule]:
                report.violations.append(Violation(rule, int(row["partition"]), int(row["offset"]),
                                                   _key_text(row["key"]), details[rule]))
    report.ok = all(
        p.offset_order_violations == p.duplicates_below_checkpoint == p.overdue_values == p.overdue_tombstones == 0
        for p in report.partitions)
    return report


def audit(
    bootstrap_servers: str,
    topic: str,
    *,
    admin_url: str | None = None,
    admin_credentials: AdminCredentials | None = None,
    master: str | None = None,
    grace_ms: int = DEFAULT_GRACE_MS,
    kafka_options: Mapping[str, str] | None = None,
    spark: SparkSession | None = None,
    spark_conf: Mapping[str, str] | None = None,
) -> AuditReport:
    """`run_audit` with a session of its own (`build_spark_session(master, conf=spark_conf)`) unless one is given."""
    session = spark if spark is not None else build_spark_session(
        master, app_name=f"minikafka-audit-{topic}", conf=spark_conf)
    return run_audit(session, bootstrap_servers, topic, admin_url=admin_url, admin_credentials=admin_credentials,
                     grace_ms=grace_ms,
                     kafka_options=kafka_options)
