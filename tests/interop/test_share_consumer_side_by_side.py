"""confluent-kafka's ShareConsumer (KIP-932, librdkafka 2.15+) against Apache Kafka 4.3.1 and minikafka with the same
scenarios and the same outcomes: implicit acknowledgement; explicit ACCEPT, RELEASE (redelivered with a higher
delivery count) and REJECT (archived, never redelivered); a new member of a fully acknowledged group receives
nothing; two consumers share one partition, each record delivered to exactly one of them; a lock that times out is
redelivered to another consumer; the delivery limit; `share.isolation.level=read_committed` skipping aborted
transactions.

Each scenario first sets its group's `share.auto.offset.reset=earliest` with the AdminClient's
incremental_alter_configs on a GROUP resource, as Kafka's own client tests do, so records produced before the
consumer joined are delivered (Kafka's default, latest, would start the share partition at the end). The Java
KafkaShareConsumer scenario keeps the default and warms up with marker records instead."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.apache_kafka import SIDE_BY_SIDE_BROKER_PROPERTIES
from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import create_topic

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One minikafka for the module (`target_bootstrap` asks for `broker`): every scenario has its own topic and
    group. It runs with the session Apache Kafka's settings (a 1000 ms lower bound for lock durations)."""
    process = BrokerProcess(tmp_path_factory.mktemp("minikafka-share"), dict(SIDE_BY_SIDE_BROKER_PROPERTIES))
    process.start()
    try:
        yield process
    finally:
        process.stop()


def _consumer(bootstrap: str, group: str, mode: str) -> Any:
    from confluent_kafka import ShareConsumer

    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode})


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})


def _produce(producer: Any, topic: str, values: list[bytes], one_batch_each: bool = False) -> None:
    for value in values:
        producer.produce(topic, value=value, partition=0)
        if one_batch_each:
            producer.flush(30)
    assert producer.flush(30) == 0


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs SET on the GROUP config resource `group` (kafka-configs --entity-type groups)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in configs.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _share_group(bootstrap: str, prefix: str, **configs: str) -> tuple[str, str]:
    """A fresh one-partition topic and a share group reading it from the earliest offset."""
    topic, group = f"{prefix}-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest", **configs})
    return topic, group


def test_implicit_acknowledgement_and_a_new_member_of_an_acknowledged_group(target_bootstrap: str) -> None:
    topic, group = _share_group(target_bootstrap, "share-implicit")
    values = [b"v%d" % i for i in range(6)]
    _produce(_producer(target_bootstrap), topic, values)
    consumer = _consumer(target_bootstrap, group, "implicit")
    consumer.subscribe([topic])
    try:
        got: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            got += [(m.value(), m.delivery_count()) for m in consumer.poll(1.0) if m.error() is None]
        assert got == [(v, 1) for v in values]
        consumer.commit_sync()  # implicit mode: the last poll's records are accepted
    finally:
        consumer.close()
    newcomer = _consumer(target_bootstrap, group, "implicit")
    newcomer.subscribe([topic])
    try:
        again = []
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            again += [m.value() for m in newcomer.poll(1.0) if m.error() is None]
        assert again == []
    finally:
        newcomer.close()


def test_explicit_accept_release_reject(target_bootstrap: str) -> None:
    from confluent_kafka import AcknowledgeType

    topic, group = _share_group(target_bootstrap, "share-explicit")
    _produce(_producer(target_bootstrap), topic, [b"accept", b"release", b"reject", b"accept-too"])
    consumer = _consumer(target_bootstrap, group, "explicit")
    consumer.subscribe([topic])
    try:
        deliveries: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(deliveries) < 5:
            for message in consumer.poll(1.0):
                assert message.error() is None, message.error()
                deliveries.append((message.value(), message.delivery_count()))
                if message.value() == b"release" and message.delivery_count() == 1:
                    consumer.acknowledge(message, AcknowledgeType.RELEASE)
                elif message.value() == b"reject":
                    consumer.acknowledge(message, AcknowledgeType.REJECT)
                else:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        quiet_until = time.monotonic() + 4  # nothing more comes: REJECT archived, the rest accepted
        while time.monotonic() < quiet_until:
            for message in consumer.poll(0.5):
                deliveries.append((message.value(), message.delivery_count()))
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        assert deliveries == [(b"accept", 1), (b"release", 1), (b"reject", 1), (b"accept-too", 1), (b"release", 2)]
    finally:
        consumer.close()


def test_two_consumers_share_one_partition(target_bootstrap: str) -> None:
    topic, group = _share_group(target_bootstrap, "share-two")
    producer = _producer(target_bootstrap)
    consumers = [_consumer(target_bootstrap, group, "implicit") for _ in range(2)]
    for consumer in consumers:
        consumer.subscribe([topic])
    try:
        received: list[list[bytes]] = [[], []]
        stop = threading.Event()

        def consume(index: int) -> None:
            while not stop.is_set():
                received[index] += [m.value() for m in consumers[index].poll(0.5) if m.error() is None]
                consumers[index].commit_sync()

        threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        # one record at a time until both members have received some (the second may join a little later)
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 40 or not (received[0] and received[1]):
            assert time.monotonic() < deadline, "the two share consumers did not both receive records"
            values.append(b"r%d" % len(values))
            _produce(producer, topic, values[-1:])
            time.sleep(0.05)
        while sum(map(len, received)) < len(values) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # anything delivered twice would show up now
        stop.set()
        for thread in threads:
            thread.join(10)
        assert sorted(received[0] + received[1]) == sorted(values)  # each record to exactly one consumer
    finally:
        for consumer in consumers:
            consumer.close()


LOCK_DURATION_MS = 2000


def test_a_lock_that_times_out_is_redelivered_to_another_consumer(target_bootstrap: str) -> None:
    """`share.record.lock.duration.ms=2000`: consumer A takes both records (explicit mode) and neither acknowledges
    nor polls again; when the lock runs out the broker makes them available again, and consumer B of the same group
    receives them with delivery count 2 — not before the lock ran out. A's next poll is refused by the client (its
    records are unacknowledged) and nothing is delivered a third time once B accepted."""
    from confluent_kafka import AcknowledgeType, IllegalStateException

    topic, group = _share_group(target_bootstrap, "share-lock",
                                **{"share.record.lock.duration.ms": str(LOCK_DURATION_MS)})
    _produce(_producer(target_bootstrap), topic, [b"held", b"held-too"])
    holder, taker = (_consumer(target_bootstrap, group, "explicit") for _ in range(2))
    holder.subscribe([topic])
    try:
        held: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while len(held) < 2 and time.monotonic() < deadline:
            held += [(m.value(), m.delivery_count()) for m in holder.poll(0.5) if m.error() is None]
        held_at = time.monotonic()
        assert held == [(b"held", 1), (b"held-too", 1)]
        taker.subscribe([topic])
        taken: list[tuple[bytes, int, float]] = []
        quiet_until = time.monotonic() + 30
        while time.monotonic() < quiet_until:
            for message in taker.poll(0.5):
                assert message.error() is None, message.error()
                taken.append((message.value(), message.delivery_count(), time.monotonic() - held_at))
                taker.acknowledge(message, AcknowledgeType.ACCEPT)
                quiet_until = time.monotonic() + 3  # a third delivery would come now
            taker.commit_sync()
        assert [(value, count) for value, count, _ in taken] == [(b"held", 2), (b"held-too", 2)]
        assert min(after_s for _, _, after_s in taken) >= LOCK_DURATION_MS / 1000 - 0.5, taken
        with pytest.raises(IllegalStateException):
            holder.poll(0.5)
    finally:
        for consumer in (holder, taker):
            consumer.close()


def test_java_kafka_share_consumers_redeliver_a_lock_that_timed_out(target_bootstrap: str, java_client: None) -> None:
    """The lock scenario with two kafka-clients 4.3.1 KafkaShareConsumers (tests/interop/java
    ShareLockTimeoutClient): the holder keeps its records unacknowledged, the taker receives them with delivery
    count 2 once the 2 s lock ran out, and nothing a third time."""
    import subprocess

    from tests.interop.java_client import LIB_DIR, ensure_built, parse_summary

    topic, group = _share_group(target_bootstrap, "share-java-lock",
                                **{"share.record.lock.duration.ms": str(LOCK_DURATION_MS)})
    _produce(_producer(target_bootstrap), topic, [b"held", b"held-too"])
    jar = ensure_built()
    done = subprocess.run(["java", "-Xmx256m", "-cp", f"{jar}:{LIB_DIR}/*", "minikafka.interop.ShareLockTimeoutClient",
                           target_bootstrap, topic, group], capture_output=True, text=True, timeout=150)
    summary = parse_summary(done, "Java share lock client")
    assert summary["holder"] == [["held", 1], ["held-too", 1]]
    assert [(value, count) for value, count, _ms in summary["taker"]] == [("held", 2), ("held-too", 2)]
    assert min(ms for _value, _count, ms in summary["taker"]) >= LOCK_DURATION_MS - 500, summary


@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_java_kafka_share_consumer(target_bootstrap: str, java_client: None, mode: str) -> None:
    """The same scenario with kafka-clients 4.3.1's KafkaShareConsumer (tests/interop/java ShareConsumerClient)."""
    import subprocess

    from tests.interop.java_client import LIB_DIR, ensure_built, parse_summary

    topic, group = f"share-java-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(target_bootstrap, topic, 1)
    jar = ensure_built()
    done = subprocess.run(["java", "-Xmx256m", "-cp", f"{jar}:{LIB_DIR}/*", "minikafka.interop.ShareConsumerClient",
                           target_bootstrap, topic, group, mode], capture_output=True, text=True, timeout=150)
    deliveries = [tuple(d) for d in parse_summary(done, "Java share consumer")["deliveries"]]
    if mode == "explicit":
        # The four records are produced one request each: when a fetch holds only the first two, the released record
        # comes back before the later ones (on either broker), so only the release's own order is fixed.
        assert sorted(deliveries) == sorted([("accept", 1), ("release", 1), ("reject", 1), ("accept-too", 1),
                                             ("release", 2)]), deliveries
        assert deliveries.index(("release", 1)) < deliveries.index(("release", 2)), deliveries
        assert [d for d in deliveries if d != ("release", 2)] == [("accept", 1), ("release", 1), ("reject", 1),
                                                                  ("accept-too", 1)], deliveries
    else:
        assert deliveries == [("accept", 1), ("release", 1), ("reject", 1), ("accept-too", 1)]


def test_the_delivery_count_limit_archives_a_record_released_every_time(target_bootstrap: str) -> None:
    """group.share.delivery.count.limit (5 on both brokers): a record released on every delivery is delivered five
    times, then archived and never delivered again; its neighbour is accepted once."""
    from confluent_kafka import AcknowledgeType

    topic, group = _share_group(target_bootstrap, "share-limit")
    producer = _producer(target_bootstrap)
    _produce(producer, topic, [b"poison"])
    _produce(producer, topic, [b"fine"])
    consumer = _consumer(target_bootstrap, group, "explicit")
    consumer.subscribe([topic])
    try:
        deliveries: list[tuple[bytes, int]] = []
        quiet_until = time.monotonic() + 30
        while time.monotonic() < quiet_until:
            for message in consumer.poll(0.5):
                assert message.error() is None, message.error()
                deliveries.append((message.value(), message.delivery_count()))
                poison = message.value() == b"poison"
                consumer.acknowledge(message, AcknowledgeType.RELEASE if poison else AcknowledgeType.ACCEPT)
                if poison and message.delivery_count() == 5:
                    quiet_until = time.monotonic() + 5
            consumer.commit_sync()
        assert sorted(deliveries) == [(b"fine", 1)] + [(b"poison", n) for n in range(1, 6)]
    finally:
        consumer.close()


def _received(consumer: Any, quiet_s: float = 3, timeout_s: float = 30) -> list[bytes]:
    """Poll (implicit acknowledgement) until nothing more came for `quiet_s`."""
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    quiet_until = time.monotonic() + quiet_s + 5  # the first poll also joins the group
    while time.monotonic() < min(quiet_until, deadline):
        for message in consumer.poll(0.5):
            assert message.error() is None, message.error()
            values.append(message.value())
            quiet_until = time.monotonic() + quiet_s
        consumer.commit_sync()
    return values


def test_read_committed_share_group_skips_aborted_transactions(target_bootstrap: str) -> None:
    """`share.isolation.level=read_committed`: of three transactions (commit, abort, commit) and a plain record,
    the group receives the committed ones only; a read_uncommitted group of the same topic receives all."""
    from confluent_kafka import Producer

    topic, committed_group = _share_group(target_bootstrap, "share-txn", **{"share.isolation.level": "read_committed"})
    uncommitted_group = f"sg-{uuid.uuid4().hex[:8]}"
    set_group_configs(target_bootstrap, uncommitted_group, {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": target_bootstrap, "transactional.id": f"txn-{topic}", "linger.ms": 0})
    producer.init_transactions(30)
    for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2", b"a3"], False), ([b"c3"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value, partition=0)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # the aborted records are in the log, then the abort marker
            producer.abort_transaction(30)
    _produce(_producer(target_bootstrap), topic, [b"plain"])
    for group, expected in ((committed_group, [b"c1", b"c2", b"c3", b"plain"]),
                            (uncommitted_group, [b"c1", b"c2", b"a1", b"a2", b"a3", b"c3", b"plain"])):
        consumer = _consumer(target_bootstrap, group, "implicit")
        consumer.subscribe([topic])
        try:
            assert _received(consumer) == expected, group
        finally:
            consumer.close()
