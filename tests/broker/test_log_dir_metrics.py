"""Kafka's LogManager gauges: OfflineLogDirectoryCount and LogDirectoryOffline turn 1 when the log dir goes offline
(after an I/O error, `LogManager.mark_log_dir_offline` — see tests/storage/test_append_faults.py for the EIO path)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.broker.metrics import BrokerMetrics
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_manager import LogManager


def scrape(metrics: BrokerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_offline_log_directory_gauges(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, {}, FakeClock(1_700_000_000_000))
    manager.startup()
    metrics = BrokerMetrics(manager.all_logs)
    metrics.register_log_manager(manager)
    directory = (("logDirectory", str(manager.log_dir)),)

    online = scrape(metrics)
    assert online[("kafka_log_logmanager_offlinelogdirectorycount", ())] == 0
    assert online[("kafka_log_logmanager_logdirectoryoffline", directory)] == 0

    manager.mark_log_dir_offline("Input/output error")

    offline = scrape(metrics)
    assert offline[("kafka_log_logmanager_offlinelogdirectorycount", ())] == 1
    assert offline[("kafka_log_logmanager_logdirectoryoffline", directory)] == 1
    manager.shutdown()
