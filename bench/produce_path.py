"""Broker CPU per Produce request, in process: the real frame parsing, dispatch, handler and append, no sockets.

    .venv/bin/python -m bench.produce_path [--record-bytes 1024] [--partitions 1] [--acks 1|all] [--requests 4000]
        [--rounds 5] [--profile FILE.pstats]

Starts a `KafkaServer` in this process, creates one topic, and feeds pre-encoded Produce v12 frames (one batch of
16 KB of records per partition, as ProducerPerformance's default batch.size; idempotent with acks=all, as the Java
producer then is) through a `ServerConnection` and the broker's `Dispatcher`, as `SocketServer._serve` does for each
frame read. Per round it prints the event loop thread's CPU (`time.thread_time`) per request and per GB of record
payload: the Python and the append's `pwrite`, without the socket reads and writes (which `bench.throughput` and
`bench.cpu_split` include). `--profile` runs one more round under cProfile with the thread's CPU clock and writes
its stats (`python -m pstats FILE`). Records nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import tempfile
import time
from pathlib import Path

from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from minikafka.broker.config import KafkaConfig
from minikafka.broker.dispatcher import Dispatcher
from minikafka.broker.server import KafkaServer
from minikafka.broker.session import ANONYMOUS, Session
from minikafka.protocol.connection import RequestReceived, ServerConnection
from minikafka.protocol.records.builder import build_batch
from minikafka.protocol.records.record import Record

BATCH_BYTES = 16_384
PRODUCE_VERSION = 12
TOPIC = "produce-path"


def _frame(request: object, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="producer-1")  # type: ignore[attr-defined]
    return bytes(request.encode(header=True, framed=True))  # type: ignore[attr-defined]


def produce_frames(count: int, record_bytes: int, partitions: int, acks: int, producer_id: int) -> list[bytes]:
    """`count` Produce frames, each one batch of BATCH_BYTES of records per partition, sequences in order."""
    per_batch = max(1, BATCH_BYTES // (record_bytes + 8))
    value = b"x" * record_bytes
    frames = []
    sequences = [0] * partitions
    data = ProduceRequest.TopicProduceData
    now_ms = int(time.time() * 1000)
    for correlation_id in range(count):
        partition_data = []
        for partition in range(partitions):
            batch = build_batch([Record(i, now_ms, None, value) for i in range(per_batch)], base_offset=0,
                                producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                base_sequence=sequences[partition] if producer_id >= 0 else -1)
            sequences[partition] += per_batch
            partition_data.append(data.PartitionProduceData(index=partition, records=batch))
        request = ProduceRequest[PRODUCE_VERSION](transactional_id=None, acks=acks, timeout_ms=30_000,
                                                  topic_data=[data(name=TOPIC, partition_data=partition_data)])
        frames.append(_frame(request, correlation_id))
    return frames


def _events(frame: bytes) -> RequestReceived:
    connection = ServerConnection()
    connection.receive_data(frame)
    event = connection.next_event()
    assert isinstance(event, RequestReceived)
    return event


async def _run(args: argparse.Namespace) -> None:
    acks = -1 if args.acks == "all" else int(args.acks)
    with tempfile.TemporaryDirectory(prefix="produce-path-") as work:
        config = KafkaConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(Path(work) / "data"),
                              "minikafka.metrics.port": "0"})
        server = KafkaServer(config)
        await server.startup()
        try:
            dispatcher = server._dispatchers[config.node_id]  # the benchmark drives the broker's own dispatcher
            assert isinstance(dispatcher, Dispatcher)
            session = Session(ANONYMOUS, "127.0.0.1", connection_id="bench")
            await dispatcher.ctx.admin.create_topic(TOPIC, args.partitions, 1, {})
            producer_id = -1
            if acks == -1:
                init = InitProducerIdRequest[4](transactional_id=None, transaction_timeout_ms=-1,
                                                producer_id=-1, producer_epoch=-1)
                frame = await dispatcher(_events(_frame(init, 0)), session)
                assert frame is not None
                # size, correlation id and the flexible header's empty tagged fields, then the body
                producer_id = InitProducerIdResponse[4].decode(bytes(frame)[9:]).producer_id
            rounds = args.rounds + (1 if args.profile else 0)
            frames = produce_frames(args.requests * rounds, args.record_bytes, args.partitions, acks, producer_id)
            payload_bytes = args.requests * args.partitions * max(1, BATCH_BYTES // (args.record_bytes + 8)) \
                * args.record_bytes
            per_request_us = []
            for round_index in range(rounds):
                profiler = cProfile.Profile(time.thread_time) if args.profile and round_index == rounds - 1 else None
                batch = frames[round_index * args.requests:(round_index + 1) * args.requests]
                connection = ServerConnection()
                started = time.thread_time()
                if profiler is not None:
                    profiler.enable()
                for frame in batch:
                    connection.receive_data(frame)
                    event = connection.next_event()
                    assert isinstance(event, RequestReceived)
                    response = await dispatcher(event, session)
                    assert response is not None
                if profiler is not None:
                    profiler.disable()
                    profiler.dump_stats(args.profile)
                    print(f"profile of round {round_index + 1} written to {args.profile}")
                    continue
                cpu_s = time.thread_time() - started
                per_request_us.append(cpu_s / len(batch) * 1e6)
                print(f"round {round_index + 1}: {per_request_us[-1]:.1f} us/request, "
                      f"{cpu_s / (payload_bytes / 1e9):.2f} CPU-s/GB", flush=True)
            median_us = statistics.median(per_request_us)
            print(f"median: {median_us:.1f} us/request, "
                  f"{median_us * args.requests / 1e6 / (payload_bytes / 1e9):.2f} CPU-s/GB")
        finally:
            await server.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.produce_path", description=__doc__.split("\n")[0])
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="1", choices=("0", "1", "all"))
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", help="write a cProfile (thread CPU clock) of one extra round here")
    asyncio.run(_run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
