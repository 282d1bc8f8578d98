"""Seeded fuzzing of a SASL listener before authentication, while an authenticated SCRAM client is served.

Many connections at once (CONCURRENCY) run CASES seeded cases (seed MINIKAFKA_FUZZ_SEED, default SEED; a failure
names its seed and case) against SASL_PLAINTEXT: random bytes, truncated headers, declared frame sizes of 100 MiB,
2 GiB - 1 and negative ones, well-formed requests of non-SASL APIs before authentication, SaslAuthenticate without
SaslHandshake, a second handshake, unknown mechanisms, SaslHandshake v0, malformed SCRAM and PLAIN tokens, a
wrong SCRAM proof, and SaslAuthenticate tokens above `sasl.server.max.receive.size`. Every case that Kafka closes
must be closed within CLOSE_DEADLINE_S (after the error response Kafka sends, where it sends one).

Meanwhile a confluent-kafka producer and consumer authenticated with SCRAM-SHA-512 keep a record in flight every
PACE_S: every record must arrive, none later than LATENCY_BOUND_S after it was produced. The broker must stay up,
log no unexpected exception, and its RSS (VmRSS of MiniKafka.pid) stay under its idle RSS + RSS_HEADROOM_MIB:
before authentication no frame above sasl.server.max.receive.size (512 KiB) is read, so CONCURRENCY connections
hold at most CONCURRENCY x 512 KiB of request bytes.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.net.sasl.scram import ScramClient

from tests.integration.sasl_broker import SaslMiniKafka

SEED = int(os.environ.get("MINIKAFKA_FUZZ_SEED", "20261124"))
CASES = 3600
CONCURRENCY = 64
CLOSE_DEADLINE_S = 5.0
PACE_S = 0.05
LATENCY_BOUND_S = 2.0
RSS_HEADROOM_MIB = 64
MAX_RECEIVE = 524_288  # sasl.server.max.receive.size (Kafka's default)
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret";')

API_VERSIONS, METADATA, PRODUCE, FETCH, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 0, 1, 17, 36
UNSUPPORTED_VERSION, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 35, 33, 34, 58

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def kafka() -> Iterator[SaslMiniKafka]:
    config = {"sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config":
              PLAIN_JAAS, "offsets.topic.num.partitions": 1, "group.initial.rebalance.delay.ms": 0}
    broker = SaslMiniKafka(config, listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
                           add_scram=["SCRAM-SHA-512=[name=alice,password=alice-secret]"])
    with broker:
        yield broker


# ------------------------------------------------------------------------------------------------ frames


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request(api_key: int, version: int, body: bytes, correlation_id: int = 1) -> bytes:
    """A size-prefixed request with header v1 (the non-flexible versions used here)."""
    client_id = b"fuzz"
    return frame(struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + body)


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def handshake(mechanism: str, version: int = 1) -> bytes:
    return request(SASL_HANDSHAKE, version, string(mechanism))


def authenticate(token: bytes, correlation_id: int = 2) -> bytes:
    return request(SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token, correlation_id)


def error_code(response: bytes) -> int:
    """The error code of a SaslHandshake/SaslAuthenticate v1 response (after the correlation id)."""
    code: int = struct.unpack_from(">h", response, 4)[0]
    return code


# ------------------------------------------------------------------------------------------------ cases


@dataclass
class Case:
    """What to send (steps: bytes, or a callable building the next bytes from the responses so far), and what
    Kafka does: close (after error responses whose codes are `codes`), or nothing in particular (`must_close`
    False: e.g. random bytes that declare a frame not yet complete)."""

    name: str
    steps: list[bytes | Callable[[list[bytes]], bytes]]
    must_close: bool = True
    codes: list[int] = field(default_factory=list)
    hold_s: float = 0.0  # keep the connection open this long after sending (must_close False)


def scram_exchange(final: Callable[[ScramClient, bytes], bytes]) -> list[bytes | Callable[[list[bytes]], bytes]]:
    """Handshake, a valid client-first message, then the final message `final(client, client_final)` builds."""
    client = ScramClient("alice", "alice-secret", "SCRAM-SHA-512")

    def client_final(responses: list[bytes]) -> bytes:
        token_size = struct.unpack_from(">i", responses[-1], 8)[0]  # after correlation id, error, null message
        server_first = responses[-1][12:12 + token_size]
        client.process_server_first_message(server_first)
        return authenticate(final(client, client.final_message()), 3)

    return [handshake("SCRAM-SHA-512"), authenticate(client.first_message()), client_final]


def make_case(rng: random.Random, index: int) -> Case:
    kind = index % 18
    if kind == 0:
        return Case("random bytes", [rng.randbytes(rng.randint(1, 4096))], must_close=False)
    if kind == 1:
        return Case("truncated header", [frame(rng.randbytes(rng.randint(0, 7)))])
    if kind == 2:
        size = rng.choice([100 * 1024 * 1024, 2**31 - 1, MAX_RECEIVE + 1])
        return Case(f"declared size {size}", [struct.pack(">i", size) + rng.randbytes(rng.randint(0, 1024))])
    if kind == 3:
        size = rng.choice([-1, -(2**31), -rng.randint(2, 2**31 - 1)])
        return Case(f"declared size {size}", [struct.pack(">i", size)])
    if kind == 4:
        api = rng.choice([(METADATA, 4, struct.pack(">ib", -1, 0)), (PRODUCE, 3, rng.randbytes(64)),
                          (FETCH, 4, rng.randbytes(32))])
        return Case(f"api {api[0]} before authentication", [request(*api)])
    if kind == 5:
        return Case("api after ApiVersions", [request(API_VERSIONS, 0, b""), request(METADATA, 4, b"\xff" * 4 + b"\0")],
                    codes=[0])
    if kind == 6:
        return Case("SaslAuthenticate without handshake", [authenticate(rng.randbytes(rng.randint(0, 512)))])
    if kind == 7:
        return Case("unknown mechanism", [handshake(rng.choice(["GSSAPI", "OAUTHBEARER", "SCRAM-SHA-1", "x" * 40]))],
                    codes=[UNSUPPORTED_SASL_MECHANISM])
    if kind == 8:
        return Case("SaslHandshake v0", [handshake("PLAIN", version=0)], codes=[UNSUPPORTED_VERSION])
    if kind == 9:
        return Case("second handshake", [handshake("PLAIN"), handshake("PLAIN")], codes=[0, ILLEGAL_SASL_STATE])
    if kind == 10:
        garbage = rng.choice([rng.randbytes(rng.randint(0, 300)), b"n,,n=alice", b"y,,n=alice,r=abc",
                              b"n,,n=nobody,r=" + rng.randbytes(24).hex().encode(), b"n,,n=al=ice,r=x"])
        return Case("bad SCRAM client-first", [handshake("SCRAM-SHA-512"), authenticate(garbage)],
                    codes=[0, SASL_AUTHENTICATION_FAILED])
    if kind == 11:
        def wrong_proof(_client: ScramClient, final: bytes) -> bytes:
            proof_at = final.rindex(b",p=") + 3
            return final[:proof_at] + bytes([final[proof_at] ^ 1]) + final[proof_at + 1:]

        def bad_nonce(_client: ScramClient, final: bytes) -> bytes:
            return final.replace(b",p=", b"x,p=")

        def garbage_final(_client: ScramClient, _final: bytes) -> bytes:
            return rng.randbytes(rng.randint(0, 200))

        mutate = rng.choice([wrong_proof, bad_nonce, garbage_final])
        return Case(f"bad SCRAM client-final ({mutate.__name__})", scram_exchange(mutate),
                    codes=[0, 0, SASL_AUTHENTICATION_FAILED])
    if kind == 12:
        token = rng.choice([b"\0alice\0wrong", b"\0\0", b"no-nul-at-all", rng.randbytes(rng.randint(0, 300))])
        return Case("bad PLAIN token", [handshake("PLAIN"), authenticate(token)], codes=[0, SASL_AUTHENTICATION_FAILED])
    if kind == 13:
        token = rng.randbytes(MAX_RECEIVE + rng.randint(1, 256 * 1024))
        return Case("SaslAuthenticate above sasl.server.max.receive.size",
                    [handshake(rng.choice(["PLAIN", "SCRAM-SHA-512"])), authenticate(token)], codes=[0])
    if kind == 14:
        body = rng.randbytes(rng.randint(1, 512))
        return Case("truncated frame then EOF", [struct.pack(">i", len(body) + 100) + body], must_close=False)
    if kind == 15:
        return Case("mutated handshake", [bytearray_flip(rng, handshake("SCRAM-SHA-512"))], must_close=False)
    if kind == 16:  # the largest token allowed before authentication, as a SCRAM client-first or PLAIN token
        token = rng.randbytes(MAX_RECEIVE - rng.randint(64, 4096))
        steps = [handshake(rng.choice(["PLAIN", "SCRAM-SHA-512"])), authenticate(token)]
        return Case("SaslAuthenticate just below the limit", steps, codes=[0, SASL_AUTHENTICATION_FAILED])
    body = rng.randbytes(MAX_RECEIVE * 9 // 10)  # most of an allowed frame, then the connection stays open
    return Case("large frame held incomplete", [struct.pack(">i", MAX_RECEIVE - 8) + body], must_close=False,
                hold_s=1.0)


def bytearray_flip(rng: random.Random, data: bytes) -> bytes:
    mutated = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        position = rng.randrange(4, len(mutated))  # keep the size prefix: the frame is complete
        mutated[position] = rng.randrange(256)
    return bytes(mutated)


async def read_until_closed(reader: asyncio.StreamReader, deadline_s: float) -> tuple[bool, list[bytes]]:
    """Frames the broker sent, and whether it closed the connection before `deadline_s`."""
    frames: list[bytes] = []
    try:
        async with asyncio.timeout(deadline_s):
            while True:
                prefix = await reader.read(4)
                if len(prefix) < 4:
                    return True, frames
                frames.append(await reader.readexactly(struct.unpack(">i", prefix)[0]))
    except (asyncio.IncompleteReadError, ConnectionError):
        return True, frames
    except TimeoutError:
        return False, frames


async def run_case(port: int, case: Case) -> str | None:
    """None when the broker behaved as Kafka does, else what went wrong."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    responses: list[bytes] = []
    try:
        for index, step in enumerate(case.steps):
            data = step(responses) if callable(step) else step
            writer.write(data)
            try:
                await writer.drain()
            except ConnectionError:
                break  # closed while we were still sending (an oversized frame): what Kafka does
            if index < len(case.steps) - 1:  # the next step may need this response
                async with asyncio.timeout(CLOSE_DEADLINE_S):
                    size = struct.unpack(">i", await reader.readexactly(4))[0]
                    responses.append(await reader.readexactly(size))
        if not case.must_close:
            await asyncio.sleep(case.hold_s)
            return None
        closed, frames = await read_until_closed(reader, CLOSE_DEADLINE_S)
        responses += frames
        if not closed:
            return f"not closed within {CLOSE_DEADLINE_S}s"
        codes = [error_code(response) for response in responses]
        if codes != case.codes:
            return f"error codes {codes}, expected {case.codes}"
        return None
    except (ConnectionError, asyncio.IncompleteReadError, TimeoutError) as error:
        return f"{type(error).__name__} {error} after {len(responses)} responses"
    finally:
        writer.close()


async def fuzz(port: int, cases: list[Case]) -> list[str]:
    semaphore = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int, case: Case) -> str | None:
        async with semaphore:
            problem = await run_case(port, case)
        return None if problem is None else f"seed {SEED} case {index} ({case.name}): {problem}"

    results = await asyncio.gather(*(one(i, case) for i, case in enumerate(cases)))
    return [problem for problem in results if problem is not None]


# ------------------------------------------------------------------------------------------------ the test


def vm_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class AuthenticatedTraffic:
    """A SCRAM-SHA-512 producer and consumer in two threads: one record every PACE_S; latencies by record."""

    def __init__(self, bootstrap: str) -> None:
        self.config = {"bootstrap.servers": bootstrap, "security.protocol": "sasl_plaintext",
                       "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-secret"}
        self.topic = f"served-{uuid.uuid4().hex[:8]}"
        # created before the consumer subscribes: a subscription that finds no topic reports an error (librdkafka's
        # "Subscribed topic not available"), which is not what this traffic is here to watch
        admin = AdminClient(self.config)  # kept until the futures are done: its handle answers them
        for future in admin.create_topics([NewTopic(self.topic, 1, 1)]).values():
            future.result(30)
        self.sent: dict[int, float] = {}
        self.latencies: dict[int, float] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.consumer = Consumer({**self.config, "group.id": f"g-{self.topic}", "auto.offset.reset": "earliest",
                                  "fetch.wait.max.ms": 50})
        self.consumer.subscribe([self.topic])
        self.producer = Producer({**self.config, "linger.ms": 0})
        self.threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _produce(self) -> None:
        number = 0
        while not self.stop.is_set():
            self.sent[number] = time.monotonic()
            self.producer.produce(self.topic, str(number).encode(),
                                  on_delivery=lambda err, _m: err and self.errors.append(str(err)))
            self.producer.poll(0)
            number += 1
            time.sleep(PACE_S)
        self.producer.flush(30)

    def _consume(self) -> None:
        drained_at: float | None = None
        while drained_at is None or time.monotonic() - drained_at < 10:
            if self.stop.is_set() and drained_at is None:
                drained_at = time.monotonic()
            message = self.consumer.poll(0.1)
            if message is None:
                if self.stop.is_set() and len(self.latencies) >= len(self.sent):
                    break
                continue
            if message.error() is not None:
                self.errors.append(str(message.error()))
                continue
            number = int(message.value())
            self.latencies[number] = time.monotonic() - self.sent[number]
        self.consumer.close()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def test_fuzzed_sasl_listener_keeps_serving_an_authenticated_client(kafka: SaslMiniKafka) -> None:
    assert kafka.pid is not None
    rng = random.Random(SEED)
    cases = [make_case(rng, index) for index in range(CASES)]
    rng.shuffle(cases)
    port = int(kafka.bootstrap_servers_for("SASL_PLAINTEXT").split(":")[1])

    traffic = AuthenticatedTraffic(kafka.bootstrap_servers_for("SASL_PLAINTEXT"))
    traffic.start()
    time.sleep(2)  # the client has authenticated, joined its group and consumed: the broker's working set
    idle_rss = vm_rss_mib(kafka.pid)
    peak_rss = idle_rss
    sampling = threading.Event()

    def sample() -> None:
        nonlocal peak_rss
        while not sampling.wait(0.05):
            peak_rss = max(peak_rss, vm_rss_mib(kafka.pid))  # type: ignore[arg-type]

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    try:
        problems = asyncio.run(fuzz(port, cases))
        fuzz_s = time.monotonic() - started
        time.sleep(1)
    finally:
        sampling.set()
        sampler.join()
        traffic.finish()

    assert problems == [], problems[:20]
    assert kafka.process is not None and kafka.process.poll() is None, kafka.log_tail()
    log = kafka.read_log()
    assert "unexpected error" not in log and "Traceback" not in log, kafka.log_tail(lines=80)
    assert peak_rss <= idle_rss + RSS_HEADROOM_MIB, f"RSS {idle_rss:.0f} MiB idle, {peak_rss:.0f} MiB peak"

    assert traffic.errors == []
    missing = sorted(set(traffic.sent) - set(traffic.latencies))
    assert missing == [], f"{len(missing)} of {len(traffic.sent)} records not consumed"
    worst = max(traffic.latencies.values())
    assert worst < LATENCY_BOUND_S, f"worst produce-to-consume latency {worst:.3f}s"
    print(f"\nseed {SEED}: {CASES} cases in {fuzz_s:.1f}s, {len(traffic.sent)} records served, latency max "
          f"{worst * 1000:.0f} ms, median {sorted(traffic.latencies.values())[len(traffic.latencies) // 2] * 1000:.0f}"
          f" ms; RSS idle {idle_rss:.0f} MiB, peak {peak_rss:.0f} MiB")
