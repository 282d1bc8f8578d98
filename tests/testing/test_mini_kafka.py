"""MiniKafka against its real child process: readiness, data across restart and kill -9, config, failures."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from minikafka.testing import BrokerStartError, MiniKafka, UnknownConfigWarning
from minikafka.testing.mini_kafka import broker_environment, metadata_broker_count


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for n in range(count):
        producer.produce(topic, key=f"k{n}", value=f"v{n}")
    assert producer.flush(30) == 0


def values(bootstrap: str, topic: str) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mini-kafka-test",
                         "enable.partition.eof": True, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: list[str] = []
    try:
        while (message := consumer.poll(10)) is not None and message.error() is None:
            found.append(message.value().decode())
    finally:
        consumer.close()
    return found


def test_context_manager_starts_a_ready_broker_and_removes_its_temporary_data() -> None:
    with MiniKafka() as kafka:
        host, port = kafka.bootstrap_servers.split(":")
        assert metadata_broker_count(host, int(port)) == 1
        assert kafka.data_dir.is_dir() and kafka.pid is not None
        produce(kafka.bootstrap_servers, "ctx", 3)
        assert (kafka.data_dir / "ctx-0").is_dir()
        data_dir = kafka.data_dir
    assert kafka.pid is None
    assert not data_dir.exists()


def test_restart_keeps_the_port_and_the_data_and_a_clean_stop_exits_zero(tmp_path: Path) -> None:
    kafka = MiniKafka(data_dir=tmp_path / "data").start()
    try:
        produce(kafka.bootstrap_servers, "restarted", 5)
        bootstrap, old_pid = kafka.bootstrap_servers, kafka.pid
        kafka.restart()
        assert kafka.bootstrap_servers == bootstrap and kafka.pid != old_pid
        assert values(kafka.bootstrap_servers, "restarted") == [f"v{n}" for n in range(5)]
    finally:
        assert kafka.stop() == 0
    assert (tmp_path / "data" / "restarted-0").is_dir(), "a data_dir the caller gave is kept"


def test_kill_is_a_real_sigkill_and_start_recovers_every_acknowledged_record(tmp_path: Path) -> None:
    kafka = MiniKafka(data_dir=tmp_path / "data").start()
    try:
        produce(kafka.bootstrap_servers, "killed", 20)
        kafka.kill()
        kafka.start()
        assert values(kafka.bootstrap_servers, "killed") == [f"v{n}" for n in range(20)]
    finally:
        kafka.stop()


def test_topic_configs_by_kafka_name_become_every_topics_default() -> None:
    with MiniKafka({"cleanup.policy": "compact", "num.partitions": 2, "log.cleaner.enable": True}) as kafka:
        produce(kafka.bootstrap_servers, "auto-created", 1)
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        assert len(admin.list_topics(timeout=10).topics["auto-created"].partitions) == 2
        resource = ConfigResource(ResourceType.TOPIC, "auto-created")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["cleanup.policy"].value == "compact"


def test_a_bad_config_fails_start_with_the_brokers_own_error(tmp_path: Path) -> None:
    kafka = MiniKafka({"log.cleaner.threads": "lots"})
    expected = r"(?s)exited with 2.*Invalid value lots for configuration log\.cleaner\.threads"
    with pytest.raises(BrokerStartError, match=expected):
        kafka.start()
    assert kafka.pid is None
    assert not kafka.data_dir.exists(), "the temporary directory of a broker that never started is removed"


def test_start_moves_to_free_ports_when_its_port_was_taken_meanwhile() -> None:
    kafka = MiniKafka()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", kafka.port))
        squatter.listen()
        taken = kafka.port
        with kafka:
            assert kafka.port != taken
            host, port = kafka.bootstrap_servers.split(":")
            assert metadata_broker_count(host, int(port)) == 1


def test_its_ports_lie_below_the_ephemeral_range_so_no_client_connection_takes_them_before_a_restart() -> None:
    """restart() and kill()/start() bind the same ports again; a client connection's source port, which the kernel
    picks from its ephemeral range, took one of them once between a stop and the start ('address already in
    use' in a clean-clone run). Ports below that range cannot be taken that way."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    kafka = MiniKafka(brokers=3, listeners={"CLIENTS": "PLAINTEXT"})
    ports = [kafka.port + index for index in range(3)] + [kafka.listener_ports["CLIENTS"] + index for index in range(3)]
    assert all(port < low for port in [*ports, kafka.metrics_port]), (ports, kafka.metrics_port, (low, high))
    with kafka:
        clients = [socket.create_connection(("127.0.0.1", kafka.port)) for _ in range(200)]
        try:
            assert not {client.getsockname()[1] for client in clients} & {*ports, kafka.metrics_port}
            kafka.kill()
            kafka.start()
            assert metadata_broker_count("127.0.0.1", kafka.port) == 3
        finally:
            for client in clients:
                client.close()


def test_a_relative_data_dir_is_taken_from_the_tests_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with MiniKafka(data_dir="relative") as kafka:
        produce(kafka.bootstrap_servers, "here", 1)
    assert (tmp_path / "relative" / "here-0").is_dir()


def test_an_unknown_config_is_a_warning_in_the_tests_process_or_an_error_when_strict() -> None:
    with pytest.warns(UnknownConfigWarning, match=r"does not know the config 'no\.such\.key'"), \
            MiniKafka({"no.such.key": 1, "log.cleaner.backoff.ms": 100}):
        pass
    with pytest.raises(BrokerStartError, match=r"does not know the config 'segment\.mss'"):
        MiniKafka({"segment.mss": 1000}, strict_config=True).start()


def test_a_second_broker_on_the_same_data_dir_fails_with_the_lock_message_first(tmp_path: Path) -> None:
    with MiniKafka(data_dir=tmp_path / "data") as first:
        with pytest.raises(BrokerStartError) as info:
            MiniKafka(data_dir=tmp_path / "data").start()
        first_line = str(info.value).splitlines()[0]
        assert first_line == (f"the broker exited with 1 during start-up: log.dirs={first.data_dir}: Failed to acquire "
                              f"lock on file .lock in {first.data_dir}. A Kafka instance in another process or thread "
                              "is using this directory; stop that broker or give this one another log.dirs")
        produce(first.bootstrap_servers, "still-served", 1)


def test_without_bytecode_writing_the_broker_keeps_its_bytecode_in_the_users_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PYTHONDONTWRITEBYTECODE would make every broker compile minikafka from source (about a second a start): the
    broker's .pyc files go to $XDG_CACHE_HOME/minikafka/pycache, and a second start reads them."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with MiniKafka():
        pass
    cache = tmp_path / "cache" / "minikafka" / "pycache"
    compiled = {path.name.split(".")[0] for path in cache.rglob("*.pyc")}
    assert {"server", "dispatcher", "unified_log"} <= compiled
    assert not any((Path(__file__).parents[2] / "broker").rglob("*.pyc"))  # none in the source tree
    before = {path: path.stat().st_mtime_ns for path in cache.rglob("*.pyc")}
    with MiniKafka():
        pass
    assert {path: path.stat().st_mtime_ns for path in cache.rglob("*.pyc")} == before  # read, not written again


def test_an_environment_that_names_a_bytecode_cache_or_allows_writing_is_passed_on_unchanged() -> None:
    assert broker_environment({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/elsewhere"}) == {
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/elsewhere"}
    assert broker_environment({"HOME": "/home/u"}) == {"HOME": "/home/u"}
