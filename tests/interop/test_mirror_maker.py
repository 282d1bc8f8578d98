"""Issue 12 "the way out": Kafka's MirrorMaker 2 (the official connect-mirror 4.x jars) migrates topics, a compacted
topic and consumer-group offsets from minikafka into Apache Kafka, and back.

Each direction runs bench/mirror_scenario.py's migration in the cut-over order of docs/moving-to-kafka.md
(MirrorMaker started while the producers still write to the source, producers stopped, replication lag 0,
consumers drained, offsets on the target, MirrorMaker stopped, producers and consumers moved). It checks every
record (partition, offset, key, value, headers, timestamp), the compacted topic's configs and latest value per key,
that the drained group resumes on the target exactly after its committed offsets and that a lagging group is never
moved past its own. The page's mm2.properties is checked to be the one the test runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.mirror_maker import ensure_mirror_maker_jars, migration_properties
from bench.mirror_scenario import (
    AFTER_CUT_OVER_RECORDS,
    BACKLOG_RECORDS,
    LAGGING_GROUP_OFFSET,
    LIVE_CONFIG_CHANGE,
    LIVE_RECORDS,
    ORDER_PARTITIONS,
    MigrationResult,
    run_migration,
)
from tests.apache_kafka import ApacheKafka
from tests.broker_process import BrokerProcess
from tests.kafka_jars import KafkaHarnessError

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

README = Path(__file__).resolve().parents[2] / "docs" / "moving-to-kafka.md"  # the docs site's page
SECTION = "## The MirrorMaker configuration"
MINIKAFKA_OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1"}


@pytest.fixture(scope="session")
def mirror_maker_lib_dir() -> Path:
    try:
        return ensure_mirror_maker_jars()
    except KafkaHarnessError as exc:
        pytest.skip(f"MirrorMaker 2 jars unavailable: {exc}")


@pytest.fixture
def minikafka(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    return broker_factory(MINIKAFKA_OVERRIDES)


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory, kafka_lib_dir: Path) -> Iterator[ApacheKafka]:
    """An Apache Kafka node of this module's own: MirrorMaker leaves its internal topics, `heartbeats` and the
    Connect worker's group behind, which the session's shared node should not carry into other tests."""
    with ApacheKafka(tmp_path_factory.mktemp("mirror-maker-kafka"), lib_dir=kafka_lib_dir) as node:
        yield node


def _check_result(result: MigrationResult) -> None:
    """run_migration raises on any failed check; restate the headline facts so a reader sees them here."""
    per_partition = (BACKLOG_RECORDS + LIVE_RECORDS) // ORDER_PARTITIONS  # all read on the source
    assert result.target_offsets == dict.fromkeys(range(ORDER_PARTITIONS), per_partition)
    assert result.resumed_records == AFTER_CUT_OVER_RECORDS
    assert all(0 <= offset <= LAGGING_GROUP_OFFSET for offset in result.lagging_target_offsets.values())
    assert result.target_topic_configs == {"cleanup.policy": "compact", LIVE_CONFIG_CHANGE[0]: LIVE_CONFIG_CHANGE[1]}


@pytest.mark.parametrize(("source", "target"), [("mini", "kafka"), ("kafka", "mini")],
                         ids=["minikafka_to_apache_kafka", "apache_kafka_to_minikafka"])
def test_migration(tmp_path: Path, minikafka: BrokerProcess, kafka: ApacheKafka, mirror_maker_lib_dir: Path,
                   record_property: Callable[[str, object], None], source: str, target: str) -> None:
    clusters = {"mini": minikafka.bootstrap, "kafka": kafka.bootstrap}
    result = run_migration(tmp_path, clusters, source, target, lib_dir=mirror_maker_lib_dir)
    print(f"MirrorMaker 2 {source} -> {target}: {result.mirror_maker_s:.1f} s wall time")
    record_property("mirror_maker_s", round(result.mirror_maker_s, 1))
    _check_result(result)


def test_readme_mm2_properties_are_the_tested_ones() -> None:
    text = README.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    listing = re.findall(r"```properties\n(.*?)```", section, flags=re.S)[0]
    pairs = (line.split("=", 1) for line in listing.splitlines() if line.strip() and not line.startswith("#"))
    readme = {key.strip(): value.strip() for key, value in pairs}
    assert readme == migration_properties("mini", readme["mini.bootstrap.servers"], "kafka",
                                          readme["kafka.bootstrap.servers"], target_replication_factor=3)
