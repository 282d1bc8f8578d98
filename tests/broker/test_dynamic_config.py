"""Dynamic broker configs in-process: `DynamicBrokerConfig` (names, types, resource names, files, precedence,
describe sources) and `AdminManager.alter_broker_config` against a real LogManager and LogCleaner (threads in-process,
no worker processes). The wire path is tests/integration/test_dynamic_cleaner_config.py."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikafka.broker.admin_manager import AdminManager
from minikafka.broker.config import KafkaConfig
from minikafka.broker.dynamic_config import (
    DYNAMIC_BROKER_CONFIG_FILE,
    DYNAMIC_DEFAULT_CONFIG_FILE,
    SOURCE_DYNAMIC_BROKER_CONFIG,
    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
    DynamicBrokerConfig,
)
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import SOURCE_DEFAULT_CONFIG, SOURCE_STATIC_BROKER_CONFIG
from minikafka.storage.log_manager import LogManager

MIB = 1024 * 1024
#: the cluster default every broker starts with (Kafka 4.3's controller with eligible leader replicas on)
ELR_DEFAULT = {"min.insync.replicas": "1"}


def static_config(log_dir: Path, **props: str) -> KafkaConfig:
    return KafkaConfig({"log.dirs": str(log_dir), "node.id": "3", "log.cleaner.dedupe.buffer.size": str(8 * MIB),
                        "minikafka.log.cleaner.worker.processes": "false", **props})


def test_kafkas_dynamic_keys_are_accepted_by_type_and_static_ones_refused(tmp_path: Path) -> None:
    """Kafka 4.3's DynamicBrokerConfig.validateConfigs: static keys refused, Java's set format."""
    dynamic = DynamicBrokerConfig(static_config(tmp_path))
    with pytest.raises(InvalidRequestError, match=r"^Cannot update these configs dynamically: "
                                                  r"\[log.dirs, num.partitions\]$"):
        dynamic.merged_for(False, {"num.partitions": "3", "log.dirs": "/x", "log.cleaner.threads": "2"})
    for name in ("log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
                 "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
                 "log.cleaner.backoff.ms", "log.retention.ms", "num.io.threads",
                 "sasl.kerberos.min.time.before.relogin"):
        with pytest.raises(InvalidRequestError, match=f"^Invalid value x for configuration {name}: Not a number"):
            dynamic.merged_for(True, {name: "x"})
    with pytest.raises(InvalidRequestError, match=r"log\.cleaner\.backoff\.ms: Value must be at least 0"):
        dynamic.merged_for(True, {"log.cleaner.backoff.ms": "-1"})
    assert dynamic.merged_for(True, {"log.cleaner.backoff.ms": "5"})["log.cleaner.backoff.ms"] == "5"
    # Kerberos: minikafka has no use for it, but stores it as Kafka does; unknown names are stored too
    merged = dynamic.merged_for(True, {"sasl.kerberos.min.time.before.relogin": "120000", "my.plugin.key": "v"})
    assert merged["sasl.kerberos.min.time.before.relogin"] == "120000" and merged["my.plugin.key"] == "v"
    with pytest.raises(InvalidRequestError, match=r"^Cannot update these configs at default cluster level, broker "
                                                  r"id must be specified: \[sasl.kerberos.kinit.cmd\]$"):
        dynamic.merged_for(False, {"sasl.kerberos.kinit.cmd": "/opt/kinit", "log.retention.ms": "1000"})
    with pytest.raises(InvalidRequestError, match=r"only per-listener using the listener prefix: "
                                                  r"\[ssl.keystore.password\]$"):
        dynamic.merged_for(True, {"ssl.keystore.password": "secret"})
    assert dynamic.merged_for(True, {"listener.name.ssl.ssl.keystore.password": "secret"})


def test_resource_names_are_empty_or_this_node(tmp_path: Path) -> None:
    dynamic = DynamicBrokerConfig(static_config(tmp_path))
    assert dynamic.is_per_broker("") is False
    assert dynamic.is_per_broker("3") is True
    with pytest.raises(InvalidRequestError, match=r"^Unexpected broker id, expected 3, but received 4$"):
        dynamic.is_per_broker("4")
    with pytest.raises(InvalidRequestError, match=r"^Node id must be an integer, but it is: b1$"):
        dynamic.is_per_broker("b1")


def test_layers_persist_and_apply_over_static_props_in_kafkas_precedence(tmp_path: Path) -> None:
    config = static_config(tmp_path, **{"log.cleaner.backoff.ms": "700"})
    dynamic = DynamicBrokerConfig(config)
    for per_broker, layer in ((False, {**dynamic.default_layer, "log.cleaner.backoff.ms": "200",
                                       "log.cleaner.threads": "2"}),
                              (True, {"log.cleaner.backoff.ms": "100"})):
        new_config = dynamic.config_of(dynamic.merged_for(per_broker, layer))
        dynamic.persist(per_broker, layer)
        dynamic.commit(per_broker, layer, new_config)
    assert "log.cleaner.threads=2" in (tmp_path / DYNAMIC_DEFAULT_CONFIG_FILE).read_text()
    assert "log.cleaner.backoff.ms=100" in (tmp_path / DYNAMIC_BROKER_CONFIG_FILE).read_text()

    restarted = DynamicBrokerConfig(config)  # a restart reads both files
    assert (restarted.current.cleaner.backoff_ms, restarted.current.cleaner.threads) == (100, 2)
    entry = restarted.broker_entry("log.cleaner.backoff.ms", "ignored", 5, "", "15000")
    assert (entry.value, entry.source, entry.read_only) == ("100", SOURCE_DYNAMIC_BROKER_CONFIG, False)
    assert entry.synonyms == [("log.cleaner.backoff.ms", "100", SOURCE_DYNAMIC_BROKER_CONFIG),
                              ("log.cleaner.backoff.ms", "200", SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
                              ("log.cleaner.backoff.ms", "700", SOURCE_STATIC_BROKER_CONFIG),
                              ("log.cleaner.backoff.ms", "15000", SOURCE_DEFAULT_CONFIG)]
    assert [(e.name, e.value, e.source) for e in restarted.default_entries()] == [
        ("log.cleaner.backoff.ms", "200", SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.cleaner.threads", "2", SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("min.insync.replicas", "1", SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)]
    static_entry = restarted.broker_entry("num.partitions", "1", 3, "", "1")
    assert (static_entry.source, static_entry.read_only) == (SOURCE_DEFAULT_CONFIG, True)


def test_invalid_persisted_configs_are_ignored_at_startup(tmp_path: Path) -> None:
    (tmp_path / DYNAMIC_DEFAULT_CONFIG_FILE).write_text("log.dirs=/elsewhere\nlog.cleaner.backoff.ms=5\n")
    dynamic = DynamicBrokerConfig(static_config(tmp_path))
    assert dynamic.default_layer == {"log.cleaner.backoff.ms": "5", **ELR_DEFAULT}, "a non-dynamic key is dropped"
    assert dynamic.current.cleaner.backoff_ms == 5
    # 16 threads leave less than 1 MiB of the 8 MiB dedupe buffer per thread: the whole file is ignored
    (tmp_path / DYNAMIC_BROKER_CONFIG_FILE).write_text("log.cleaner.threads=16\n")
    dynamic = DynamicBrokerConfig(static_config(tmp_path))
    assert (dynamic.default_layer, dynamic.broker_layer) == (ELR_DEFAULT, {})
    assert dynamic.current.cleaner.threads == 1
    assert (tmp_path / DYNAMIC_BROKER_CONFIG_FILE).read_text() == "log.cleaner.threads=16\n", "an ignored file kept"


@pytest.fixture
def admin(tmp_path: Path) -> Iterator[AdminManager]:
    config = static_config(tmp_path / "data", **{"log.cleaner.threads": "2", "log.cleaner.backoff.ms": "10"})
    clock = FakeClock(1_700_000_000_000)
    log_manager = LogManager(config.log_dir, config.props, clock)
    log_manager.startup()
    cleaner = LogCleaner(log_manager, config.cleaner, clock)
    cleaner.startup()
    try:
        yield AdminManager(log_manager, config, log_cleaner=cleaner)
    finally:
        cleaner.shutdown()
        log_manager.shutdown()


def test_alter_validates_with_the_log_cleaner_then_restarts_its_threads(admin: AdminManager) -> None:
    cleaner = admin.log_cleaner
    assert cleaner is not None
    old_threads = [w.thread for w in cleaner.workers]
    for threads, rule in (("0", "Log cleaner threads should be at least 1"),
                          ("5", "Log cleaner threads cannot be increased to more than double the current value 2")):
        with pytest.raises(InvalidRequestError, match=f"^Invalid dynamic configuration: {rule}"):
            asyncio.run(admin.alter_broker_config("", {**ELR_DEFAULT, "log.cleaner.threads": threads}, False))
    # 9 threads get less than 1 MiB of dedupe buffer each: Kafka's cross-key check
    with pytest.raises(InvalidRequestError, match="must be at least 1MB per cleaner thread"):
        asyncio.run(admin.alter_broker_config("", {"log.cleaner.dedupe.buffer.size": str(2 * MIB)}, False))
    asyncio.run(admin.alter_broker_config("", {**ELR_DEFAULT, "log.cleaner.threads": "4"}, True))
    assert len(cleaner.workers) == 2 and [w.thread for w in cleaner.workers] == old_threads, "validate_only applied"

    asyncio.run(admin.alter_broker_config("3", {"log.cleaner.threads": "4", "log.cleaner.backoff.ms": "20"}, False))
    assert (cleaner.config.threads, cleaner.config.backoff_ms) == (4, 20)
    assert len(cleaner.workers) == 4 and all(w.thread is not None and w.thread.is_alive() for w in cleaner.workers)
    assert not any(thread is not None and thread.is_alive() for thread in old_threads), "old threads still run"
    assert admin.config.cleaner.threads == 4
    entry = next(e for e in admin.describe_broker_config("3") if e.name == "log.cleaner.threads")
    assert (entry.value, entry.source) == ("4", SOURCE_DYNAMIC_BROKER_CONFIG)
    with pytest.raises(InvalidRequestError, match="or empty string, but received 9"):
        admin.describe_broker_config("9")


def test_dynamic_message_max_bytes_is_every_topics_default(admin: AdminManager) -> None:
    asyncio.run(admin.create_topic("plain", 2, 1, {}))
    asyncio.run(admin.create_topic("overridden", 1, 1, {"max.message.bytes": "5000"}))
    asyncio.run(admin.alter_broker_config("", {**ELR_DEFAULT, "message.max.bytes": "2000"}, False))
    log_manager = admin.log_manager
    assert [log_manager.get_log("plain", p).config.max_message_bytes for p in (0, 1)] == [2000, 2000]  # type: ignore[union-attr]
    assert log_manager.get_log("overridden", 0).config.max_message_bytes == 5000  # type: ignore[union-attr]
    entry = next(e for e in admin.describe_topic_config("plain") if e.name == "max.message.bytes")
    assert (entry.value, entry.source) == ("2000", SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert entry.synonyms[0] == ("message.max.bytes", "2000", SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_unused_and_sensitive_keys_are_stored_reported_and_read_back(tmp_path: Path) -> None:
    """Kerberos and a listener's keystore password: persisted (the file is 0600, a PEM value stays one line), read
    back at restart, described with their dynamic source; the password never shown."""
    dynamic = DynamicBrokerConfig(static_config(tmp_path))
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    layer = {"sasl.kerberos.min.time.before.relogin": "120000", "listener.name.ssl.ssl.keystore.password": "s3cret",
             "listener.name.ssl.ssl.truststore.certificates": pem}
    dynamic.commit(True, layer, dynamic.config_of(dynamic.merged_for(True, layer)))
    dynamic.persist(True, layer)
    path = tmp_path / DYNAMIC_BROKER_CONFIG_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert "MIIB" in path.read_text() and len(path.read_text().splitlines()) == 2 + len(layer)  # header + a line each
    restarted = DynamicBrokerConfig(static_config(tmp_path))
    assert restarted.broker_layer == layer
    entries = {entry.name: entry for entry in restarted.kafka_key_entries(set())}
    kerberos = entries["sasl.kerberos.min.time.before.relogin"]
    assert (kerberos.value, kerberos.source, kerberos.read_only) == ("120000", SOURCE_DYNAMIC_BROKER_CONFIG, False)
    assert kerberos.synonyms[-1] == ("sasl.kerberos.min.time.before.relogin", "60000", SOURCE_DEFAULT_CONFIG)
    password = entries["listener.name.ssl.ssl.keystore.password"]
    assert (password.value, password.is_sensitive, password.source) == (None, True, SOURCE_DYNAMIC_BROKER_CONFIG)
    assert all(value is None for _name, value, _source in password.synonyms)
    unset = entries["ssl.key.password"]
    assert (unset.value, unset.is_sensitive, unset.read_only) == (None, True, False)


def test_the_cluster_default_min_insync_replicas_is_generated_and_guarded(tmp_path: Path) -> None:
    """Kafka 4.3's controller with ELR on (maybeGenerateElrSafetyRecords): a cluster default min.insync.replicas of
    the static value, persisted; a broker-level one found at start is removed; altering one refused."""
    (tmp_path / DYNAMIC_BROKER_CONFIG_FILE).write_text("min.insync.replicas=3\nlog.cleaner.backoff.ms=9\n")
    dynamic = DynamicBrokerConfig(static_config(tmp_path, **{"min.insync.replicas": "2"}))
    assert dynamic.default_layer == {"min.insync.replicas": "2"}
    assert dynamic.broker_layer == {"log.cleaner.backoff.ms": "9"}
    assert "min.insync.replicas=2" in (tmp_path / DYNAMIC_DEFAULT_CONFIG_FILE).read_text()
    assert "min.insync.replicas" not in (tmp_path / DYNAMIC_BROKER_CONFIG_FILE).read_text()
    assert dynamic.current.props["min.insync.replicas"] == "2"
    with pytest.raises(InvalidConfigError, match=r"^Broker-level min\.insync\.replicas cannot be altered while ELR"):
        dynamic.check_elr_min_insync_replicas(True, {}, ["min.insync.replicas"])
    with pytest.raises(InvalidConfigError, match=r"^Cluster-level min\.insync\.replicas cannot be removed while ELR"):
        dynamic.check_elr_min_insync_replicas(False, {"log.cleaner.backoff.ms": "5"}, ["log.cleaner.backoff.ms"])
    dynamic.check_elr_min_insync_replicas(False, {"min.insync.replicas": "4"}, ["min.insync.replicas"])
    dynamic.check_elr_min_insync_replicas(True, {"log.cleaner.backoff.ms": "5"}, ["log.cleaner.backoff.ms"])
    # a user's value survives restarts
    dynamic.persist(False, {"min.insync.replicas": "4"})
    assert DynamicBrokerConfig(static_config(tmp_path)).default_layer == {"min.insync.replicas": "4"}


def test_a_listeners_jaas_config_is_never_logged_nor_described_and_its_file_is_0600_from_the_first_byte(
        admin: AdminManager, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's isSensitive: `sasl.jaas.config` is a PASSWORD key, under a listener prefix with or without the
    mechanism; a key of unknown type counts as sensitive too. The file's mode is read when it is renamed into place,
    with a umask that would leave it world-readable."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
    layer = {"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
             "listener.name.sasl_ssl.sasl.jaas.config": jaas.replace("alice-secret", "other-secret"),
             "my.plugin.token": "plugin-secret", "log.cleaner.backoff.ms": "20"}
    renamed_modes = []
    real_replace = os.replace

    def replace(source: Any, target: Any) -> None:
        renamed_modes.append(os.stat(source).st_mode & 0o777)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    old_umask = os.umask(0o000)
    try:
        with caplog.at_level(logging.INFO):
            asyncio.run(admin.alter_broker_config("3", layer, False))
    finally:
        os.umask(old_umask)
    assert renamed_modes == [0o600]
    assert "secret" not in caplog.text
    assert "'listener.name.sasl_plaintext.plain.sasl.jaas.config': '(redacted)'" in caplog.text
    assert "'log.cleaner.backoff.ms': '20'" in caplog.text
    entries = {entry.name: entry for entry in admin.describe_broker_config("3")}
    for name in ("listener.name.sasl_plaintext.plain.sasl.jaas.config", "listener.name.sasl_ssl.sasl.jaas.config",
                 "my.plugin.token"):
        assert (entries[name].value, entries[name].is_sensitive) == (None, True), name
        assert all(value is None for _name, value, _source in entries[name].synonyms)
    assert (entries["log.cleaner.backoff.ms"].value, entries["log.cleaner.backoff.ms"].is_sensitive) == ("20", False)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        DynamicBrokerConfig(admin.config)  # at start-up the persisted layer is logged as applied
    assert "Applied dynamic broker configs" in caplog.text and "secret" not in caplog.text


@pytest.mark.parametrize(("name", "sensitive"), [
    ("sasl.jaas.config", True), ("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", True),
    ("listener.name.ssl.ssl.key.password", True), ("a.plugin.secret", True),
    ("listener.name.ssl.max.connections", False), ("log.retention.hours", False), ("log.cleaner.threads", False),
    ("listener.name.sasl_ssl.plain.sasl.server.callback.handler.class", False), ("minikafka.metrics.host", False),
])
def test_sensitive_is_kafkas_maybe_sensitive(name: str, sensitive: bool) -> None:
    """PASSWORD keys and keys of unknown type are sensitive; listener- and mechanism-prefixed keys are typed as their
    base key (Kafka's DynamicBrokerConfig.brokerConfigSynonyms)."""
    from minikafka.broker.dynamic_config import is_sensitive

    assert is_sensitive(name) is sensitive
