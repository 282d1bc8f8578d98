"""`minikafka erase --topic T --key K [--partition N] [--wait] [--timeout S] [--admin-url URL]
[--bootstrap-servers H:P]`: erase one key of a compacted topic and print an erasure receipt (broker/erasure.py).

The broker writes a tombstone for the key (or, with `--bootstrap-servers`, this command produces it through the
Kafka protocol with kafka-python, acks=all, as any client would), compacts the partition and reads its files for older
records of the key. The last stdout line is the receipt as one JSON object. Without `--wait` one attempt is made;
with it, the attempt is repeated (same tombstone) when the receipt names a wait that fits in `--timeout`
(`min.compaction.lag.ms`, `file.delete.delay.ms`), with what it waits for on stderr. Exit 0 only when verified; 1 when
not verified (the reason on stderr and in the receipt), 2 for bad arguments. Stdlib and kafka-python only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse

from minikafka.broker.admin_client import (
    add_admin_credential_options,
    admin_json_request,
    credentials_from_args,
    with_credentials,
)

#: after a wait the broker named, this much more: the cleaner's next look and the deletion task are periodic
_RETRY_SLACK_S = 1.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "erase", help="erase a key of a compacted topic: tombstone, compact, verify on disk, print a receipt")
    parser.add_argument("--topic", required=True)
    key = parser.add_mutually_exclusive_group(required=True)
    key.add_argument("--key", help="the key as a UTF-8 string")
    key.add_argument("--key-hex", help="the key as hex bytes")
    parser.add_argument("--partition", type=int, help="the partition (default: the one Kafka's default "
                                                      "partitioner picks for the key)")
    parser.add_argument("--wait", action="store_true", help="wait until verified (min.compaction.lag.ms, "
                                                           "file.delete.delay.ms), at most --timeout")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait in all (default 300)")
    parser.add_argument("--admin-url", default="http://127.0.0.1:9404",
                        help="the broker's metrics/admin HTTP address (minikafka.metrics.port)")
    parser.add_argument("--bootstrap-servers", help="produce the tombstone through this Kafka listener "
                                                    "(PLAINTEXT) instead of letting the broker write it")
    add_admin_credential_options(parser)
    parser.set_defaults(handler=erase)


def _fail(message: str, code: int = 1) -> int:
    print(f"minikafka erase: {message}", file=sys.stderr)
    return code


def _produce_tombstone(args: argparse.Namespace, key: bytes) -> tuple[int, int]:
    """(partition, offset) of a tombstone produced with kafka-python's producer (its default partitioner)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=args.bootstrap_servers, acks="all", linger_ms=0)
    try:
        metadata = producer.send(args.topic, key=key, value=None, partition=args.partition).get(timeout=30)
    finally:
        producer.close(timeout=5)
    return metadata.partition, metadata.offset


def erase(args: argparse.Namespace) -> int:
    try:
        credentials = credentials_from_args(args)
        key = bytes.fromhex(args.key_hex) if args.key_hex is not None else args.key.encode()
    except ValueError as error:
        return _fail(str(error), 2)
    deadline = time.monotonic() + args.timeout
    query: dict[str, str] = {"topic": args.topic, "key_hex": key.hex()}
    if args.partition is not None:
        query["partition"] = str(args.partition)
    if args.bootstrap_servers:
        requested_at_ms = int(time.time() * 1000)
        try:
            partition, offset = _produce_tombstone(args, key)
        except Exception as error:  # kafka-python raises its own KafkaError family and OSErrors
            return _fail(f"cannot produce the tombstone through {args.bootstrap_servers}: {error}")
        query.update(partition=str(partition), tombstone_offset=str(offset), requested_at_ms=str(requested_at_ms))
    headers = with_credentials({}, credentials)
    while True:
        remaining_s = max(deadline - time.monotonic(), 1.0)
        query["timeout_ms"] = str(int(remaining_s * 1000))
        url = f"{args.admin_url.rstrip('/')}/admin/erase?{urllib.parse.urlencode(query)}"
        try:
            status, receipt = admin_json_request(url, headers, remaining_s + 30)
        except OSError as error:
            return _fail(f"cannot reach {args.admin_url}: {error}")
        if status != 200:
            hint = (" (pass --admin-user/--admin-password or set MINIKAFKA_ADMIN_USER/MINIKAFKA_ADMIN_PASSWORD)"
                    if status == 401 else "")
            return _fail(f"HTTP {status}: {receipt.get('error', receipt)}{hint}")
        if receipt["verified"] or not args.wait:
            break
        wait_s = receipt.get("retry_after_ms", 1000) / 1000 + _RETRY_SLACK_S
        if time.monotonic() + wait_s > deadline:
            break
        print(f"minikafka erase: not verified yet, waiting {wait_s:.1f} s: {receipt['reason']}", file=sys.stderr)
        time.sleep(wait_s)
        query.update(partition=str(receipt["partition"]), tombstone_offset=str(receipt["tombstone_offset"]),
                     requested_at_ms=str(receipt["requested_at_ms"]))
    print(json.dumps(receipt))
    if not receipt["verified"]:
        return _fail(f"not verified: {receipt['reason']}")
    return 0
