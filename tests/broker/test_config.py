"""Broker configuration: Kafka's names and defaults, server.properties complete, bad values refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.broker.config import BROKER_CONFIG_DEF, KafkaConfig, load_properties
from minikafka.cleaner.config import CLEANER_CONFIG_DEF
from minikafka.protocol.errors import InvalidConfigError
from minikafka.storage.config_def import format_value
from minikafka.storage.log_config import TOPIC_CONFIG_DEF, TOPIC_TO_BROKER_SYNONYM

REPO = Path(__file__).resolve().parents[2]
SERVER_PROPERTIES = REPO / "config" / "server.properties"


def test_server_properties_lists_every_broker_key_with_its_default() -> None:
    props = load_properties(SERVER_PROPERTIES)
    text = SERVER_PROPERTIES.read_text()
    for name, key in BROKER_CONFIG_DEF.keys.items():
        if name in ("advertised.listeners",):
            assert f"#{name}=" in text
            continue
        if name == "log.dirs":
            assert props[name] == "./data"
            continue
        assert props[name] == format_value(key, key.default), name


def test_server_properties_lists_topic_defaults_and_cleaner_keys() -> None:
    props = load_properties(SERVER_PROPERTIES)
    for topic_name, broker_name in TOPIC_TO_BROKER_SYNONYM.items():
        key = TOPIC_CONFIG_DEF.keys[topic_name]
        if not broker_name.startswith("log.cleaner."):
            assert props[broker_name] == format_value(key, key.default), broker_name
    assert set(props) >= set(CLEANER_CONFIG_DEF.names())


def test_server_properties_is_a_valid_configuration() -> None:
    config = KafkaConfig(load_properties(SERVER_PROPERTIES))
    assert (config.listener.host, config.listener.port) == ("127.0.0.1", 9092)
    assert config.log_dir == Path("./data")


@pytest.mark.parametrize(
    ("key", "value", "rule"),
    [
        ("num.partitions", "0", "Value must be at least 1"),
        ("log.segment.bytes", "10", "at least 14"),
        ("auto.create.topics.enable", "maybe", "either true or false"),
        ("log.cleaner.threads", "-1", "at least 0"),
        ("socket.send.buffer.bytes", "0", "Value must be -1 (the OS default) or at least 1"),
        ("socket.receive.buffer.bytes", "-2", "Value must be -1 (the OS default) or at least 1"),
        # Kafka 4.3.1's ShareGroupConfig ranges for the lock duration a share-group test lowers
        ("group.share.min.record.lock.duration.ms", "999", "Value must be at least 1000"),
        ("group.share.min.record.lock.duration.ms", "30001", "Value must be no more than 30000"),
        ("group.share.record.lock.duration.ms", "500", "Value must be at least 1000"),
        ("group.share.max.record.lock.duration.ms", "29999", "Value must be at least 30000"),
    ],
)
def test_bad_value_names_key_value_and_rule(key: str, value: str, rule: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        KafkaConfig({key: value})
    assert key in info.value.message and value in info.value.message and rule in info.value.message


def test_share_lock_durations_keep_kafkas_order() -> None:
    """ShareGroupConfig's cross-checks: min <= lock duration <= max; lowering both to 1000 ms is valid."""
    KafkaConfig({"group.share.min.record.lock.duration.ms": "1000", "group.share.record.lock.duration.ms": "1000"})
    with pytest.raises(InvalidConfigError) as info:
        KafkaConfig({"group.share.min.record.lock.duration.ms": "20000",
                     "group.share.record.lock.duration.ms": "15000"})
    assert info.value.message == ("group.share.record.lock.duration.ms must be greater than or equal to "
                                  "group.share.min.record.lock.duration.ms")


def test_broker_refuses_to_start_on_a_bad_value(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikafka.broker", "serve", "--override", f"log.dirs={tmp_path}",
         "--override", "log.segment.bytes=-5"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "Invalid value -5 for configuration log.segment.bytes" in result.stderr


def test_listener_must_be_name_host_port() -> None:
    with pytest.raises(InvalidConfigError, match=r"listeners: Unable to parse 127\.0\.0\.1:9093 to a broker endpoint"):
        KafkaConfig({"listeners": "127.0.0.1:9093"})
