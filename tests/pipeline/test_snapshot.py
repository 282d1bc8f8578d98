"""`minikafka snapshot`: a topic with updates and deletes kept as a Delta table, checked by a reader other than Spark
(the `deltalake` package, delta-rs); a second run reads only the new offsets. The job's reads are the connector's,
proven side by side with Apache Kafka in test_connector_*.py; bench/spark_pipeline.py runs it on both brokers."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.pipeline.snapshot import BatchProgress, run_snapshot
from tests.pipeline.kafka_data import Message, Record, create_topic, end_offsets, produce, unique_topic
from tests.pipeline.pipeline_cli import run_pipeline_command_in_process

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.broker_process import BrokerProcess

PARTITIONS = 3


def live_state(records: list[Record]) -> dict[bytes, tuple[bytes, int, int, list[tuple[str, bytes | None]]]]:
    """key -> (value, partition, offset, headers) of each key's latest record, tombstoned keys left out."""
    latest: dict[bytes, Record] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert record.key is not None
        latest[record.key] = record
    return {key: (r.value, r.partition, r.offset, list(r.headers)) for key, r in latest.items() if r.value is not None}


def delta_table_state(path: Path) -> dict[bytes, tuple[bytes, int, int, list[tuple[str, bytes | None]]]]:
    """The table as delta-rs reads it, in the shape of `live_state`; a key twice would be a failure."""
    from deltalake import DeltaTable

    rows: list[dict[str, Any]] = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    state = {row["key"]: (row["value"], row["partition"], row["offset"],
                          [(h["key"], h["value"]) for h in row["headers"] or []]) for row in rows}
    assert len(state) == len(rows), "a key has more than one row"
    return state


def updates(round_number: int, keys: range, deleted: range = range(0)) -> list[Message]:
    """A value for every key in `keys`, then tombstones for the keys in `deleted`."""
    messages = [Message(b"key-%04d" % k, b"value-%d-%d" % (round_number, k),
                        headers=(("round", str(round_number).encode()),)) for k in keys]
    return messages + [Message(b"key-%04d" % k, None) for k in deleted]


def test_snapshot_keeps_the_live_state_and_reads_only_new_offsets(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    target_bootstrap = broker.bootstrap
    topic = unique_topic("snapshot")
    create_topic(target_bootstrap, topic, PARTITIONS)
    table = tmp_path / "table"
    # 300 keys, each written twice, one in 7 deleted
    produced = produce(target_bootstrap, topic, updates(1, range(300)))
    produced += produce(target_bootstrap, topic, updates(2, range(300), deleted=range(0, 300, 7)))
    seen: list[BatchProgress] = []

    first = run_snapshot(spark, target_bootstrap, topic, table, on_batch=seen.append)

    assert delta_table_state(table) == live_state(produced)
    assert first.rows_read == len(produced)
    ends = end_offsets(target_bootstrap, topic, PARTITIONS)
    assert first.offsets_reached == {p: hw for p, (_start, hw) in ends.items() if hw > 0}
    assert seen == first.batches and all(b.rows_read > 0 for b in seen)

    # Deleted keys 0, 7, ... come back, keys below 100 change, every 5th of 100..199 is deleted.
    more = produce(target_bootstrap, topic, updates(3, range(100), deleted=range(100, 200, 5)))

    second = run_snapshot(spark, target_bootstrap, topic, table)

    assert second.rows_read == len(more), "the second run must read only the new offsets"
    assert delta_table_state(table) == live_state(produced + more)
    assert (tmp_path / "table" / "_minikafka_checkpoint").is_dir()

    third = run_snapshot(spark, target_bootstrap, topic, table)
    assert third.rows_read == 0 and delta_table_state(table) == live_state(produced + more)


def test_snapshot_command_on_a_compacted_topic_after_cleaning(
    spark: SparkSession, broker_factory: Any, tmp_path: Path
) -> None:
    """`minikafka snapshot` through the CLI's entry point, on a topic with offset gaps left by the cleaner (and its
    tombstones removed): the same table as the uncompacted history gives, and a progress line per micro-batch."""
    broker: BrokerProcess = broker_factory({"log.cleaner.backoff.ms": "100"})
    topic = unique_topic("snapshot-compacted")
    create_topic(broker.bootstrap, topic, 2, {"cleanup.policy": "compact", "delete.retention.ms": "0",
                                               "min.cleanable.dirty.ratio": "0.01"})
    produced = produce(broker.bootstrap, topic, updates(1, range(200)) + updates(2, range(200), range(0, 200, 4)))
    request = urllib.request.Request(f"{broker.admin_url}/admin/compact?topic={topic}&wait=true", data=b"",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200

    done = run_pipeline_command_in_process("snapshot", "--bootstrap-servers", broker.bootstrap, "--topic", topic,
                                "--table", str(tmp_path / "table"))

    assert done.returncode == 0, done.stderr[-3000:]
    batches = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"event": "batch"')]
    rows_read = sum(b["rows_read"] for b in batches)
    assert 0 < rows_read < len(produced), "the cleaner should have removed superseded records"
    ends = end_offsets(broker.bootstrap, topic, 2)
    reached = {int(p): o for b in batches for p, o in b["offsets_reached"].items()}
    assert sorted(reached) == [0, 1] and all(0 < reached[p] <= hw for p, (_start, hw) in ends.items())
    assert f"{rows_read} records read" in done.stdout
    assert delta_table_state(tmp_path / "table") == live_state(produced)


def test_continuous_snapshot_follows_new_records_until_stopped(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    """`continuous=True`: a processing-time trigger keeps applying new records until the query is stopped."""
    import threading
    import time

    topic = unique_topic("snapshot-continuous")
    create_topic(broker.bootstrap, topic, 2)
    table = tmp_path / "table"
    produced = produce(broker.bootstrap, topic, updates(1, range(50)))
    results: list[Any] = []
    seen: list[BatchProgress] = []
    runner = threading.Thread(target=lambda: results.append(run_snapshot(
        spark, broker.bootstrap, topic, table, continuous=True, trigger_interval="500 milliseconds",
        on_batch=seen.append)))
    runner.start()

    def wait_for_table(expected: dict[bytes, Any]) -> None:
        """Until the table holds `expected` and the micro-batch that wrote it has finished."""
        deadline = time.monotonic() + 60
        while True:
            try:
                if sum(b.rows_read for b in seen) == len(produced) and delta_table_state(table) == expected:
                    return
            except Exception:  # the table is created by the query: not there yet
                pass
            assert runner.is_alive() and time.monotonic() < deadline, "the continuous snapshot did not catch up"
            time.sleep(0.3)

    try:
        wait_for_table(live_state(produced))
        produced += produce(broker.bootstrap, topic, updates(2, range(25), deleted=range(40, 50)))
        wait_for_table(live_state(produced))
    finally:
        for query in spark.streams.active:
            if query.name == f"minikafka-snapshot-{topic}":
                query.stop()
        runner.join(60)
    assert not runner.is_alive()
    [result] = results
    assert result.rows_read == len(produced) and len(result.batches) >= 2
