"""`minikafka snapshot` and `minikafka audit`: subcommands the `minikafka` CLI finds through the
`minikafka.commands` entry points (the broker never imports this package); and `minikafka compact --exact`, which
the broker's `compact` command hands over through the `minikafka.exact_compaction` entry point. Registering
imports no Spark: PySpark loads only when a command runs, and a missing `[spark]` extra is a one-line error."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from minikafka.broker.admin_client import add_admin_credential_options, credentials_from_args
from minikafka.pipeline.session import SparkUnavailableError
from minikafka.pipeline.topic_configs import describe_topic_configs, is_compacted


def _pairs(flag: str, pairs: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise SystemExit(f"{flag} expects key=value, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--master", help="Spark master URL (default: local[*])")
    parser.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option for Spark's Kafka source, e.g. kafka.security.protocol=SSL")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf (e.g. spark.driver.memory=4g)")


def register_snapshot(commands: Any) -> None:
    parser = commands.add_parser("snapshot", help="keep a Delta table equal to a topic's current state (Spark)")
    _common(parser)
    parser.add_argument("--table", required=True, metavar="PATH", help="the Delta table's path or URL")
    parser.add_argument("--checkpoint", metavar="PATH", help="default: PATH/_minikafka_checkpoint")
    parser.add_argument("--continuous", action="store_true", help="keep running with a processing-time trigger")
    parser.add_argument("--trigger-interval", default="10 seconds", help="with --continuous (default: 10 seconds)")
    parser.set_defaults(handler=run_snapshot_command)


def register_audit(commands: Any) -> None:
    parser = commands.add_parser("audit", help="check a compacted topic's guarantees on Spark; JSON report")
    _common(parser)
    parser.add_argument("--admin-url", default=None,
                        help="the broker's metrics/admin HTTP address for the cleaner checkpoint "
                             "(default: http://<bootstrap host>:9404)")
    add_admin_credential_options(parser)
    parser.add_argument("--grace-ms", type=int, default=None,
                        help="allowance for the cleaning itself, added to every deadline (default: 60000)")
    parser.set_defaults(handler=run_audit_command)


def _check_topic(command: str, args: argparse.Namespace) -> dict[str, str] | None:
    """Before Spark starts (tens of seconds, and a table or checkpoint written): the broker answers and the topic
    exists. Its configs, or None after printing the one-line reason."""
    try:
        return describe_topic_configs(args.bootstrap_servers, args.topic, _pairs("--kafka-option", args.kafka_option))
    except ValueError as error:
        print(f"minikafka {command}: {error}", file=sys.stderr)
        return None


def run_snapshot_command(args: argparse.Namespace) -> int:
    if _check_topic("snapshot", args) is None:
        return 2
    try:
        from minikafka.pipeline.snapshot import print_progress, snapshot

        result = snapshot(
            args.bootstrap_servers, args.topic, args.table, checkpoint_path=args.checkpoint, master=args.master,
            continuous=args.continuous, trigger_interval=args.trigger_interval,
            kafka_options=_pairs("--kafka-option", args.kafka_option), spark_conf=_pairs("--conf", args.conf),
            on_batch=print_progress,
        )
    except SparkUnavailableError as error:
        print(f"minikafka snapshot: {error}", file=sys.stderr)
        return 2
    print(f"snapshot of {args.topic} at {result.table_path}: {len(result.batches)} batch(es), "
          f"{result.rows_read} records read, offsets reached {dict(sorted(result.offsets_reached.items()))}",
          flush=True)
    return 0


def run_audit_command(args: argparse.Namespace) -> int:
    """Exit 0 when every guarantee holds, 1 when one is broken (the report names partition and offset)."""
    configs = _check_topic("audit", args)
    if configs is None:
        return 2
    if not is_compacted(configs):
        print(f"minikafka audit: {args.topic} has cleanup.policy={configs.get('cleanup.policy')}: compaction "
              "guarantees do not apply; only the offset order is checked", file=sys.stderr, flush=True)
    try:
        from minikafka.pipeline.audit import DEFAULT_GRACE_MS, audit

        admin_url = args.admin_url or f"http://{args.bootstrap_servers.split(',')[0].rsplit(':', 1)[0]}:9404"
        report = audit(
            args.bootstrap_servers, args.topic, admin_url=admin_url, admin_credentials=credentials_from_args(args),
            master=args.master,
            grace_ms=DEFAULT_GRACE_MS if args.grace_ms is None else args.grace_ms,
            kafka_options=_pairs("--kafka-option", args.kafka_option), spark_conf=_pairs("--conf", args.conf),
        )
    except SparkUnavailableError as error:
        print(f"minikafka audit: {error}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"minikafka audit: {error}", file=sys.stderr)
        return 2
    print(report.to_json(), flush=True)
    for violation in report.violations:
        print(f"minikafka audit: {args.topic}-{violation.partition} offset {violation.offset} "
              f"(key {violation.key!r}): {violation.rule}: {violation.detail}", file=sys.stderr)
    return 0 if report.ok else 1


def run_exact_compaction(args: argparse.Namespace) -> int:
    """`minikafka compact TOPIC --exact`: the plan on Spark, applied by the broker; exit 0 when every partition
    was cleaned (or had nothing to clean), 1 otherwise, 2 when the plan could not be made or was refused."""
    configs = _check_topic("compact --exact", args)
    if configs is None:
        return 2
    if not is_compacted(configs):
        print(f"minikafka compact --exact: {args.topic} has cleanup.policy={configs.get('cleanup.policy')}: only a "
              "compacted topic is compacted (kafka-configs --alter --add-config cleanup.policy=compact)",
              file=sys.stderr)
        return 2
    try:
        from minikafka.pipeline.audit import fetch_cleaner_state
        from minikafka.pipeline.exact_plan import compact_exact
        from minikafka.pipeline.session import build_spark_session

        if fetch_cleaner_state(args.admin_url, args.topic, credentials=credentials_from_args(args)) is None:
            raise ValueError(f"no minikafka admin endpoint answers at {args.admin_url} (--admin-url)")
        spark = build_spark_session(args.master, app_name=f"minikafka-exact-compaction-{args.topic}",
                                    conf=_pairs("--conf", args.conf))
        replies = compact_exact(
            spark, args.bootstrap_servers, args.topic, args.admin_url,
            partitions=None if args.partition is None else [args.partition], wait=args.wait,
            timeout_s=args.timeout, kafka_options=_pairs("--kafka-option", args.kafka_option),
            credentials=credentials_from_args(args),
        )
    except (SparkUnavailableError, ValueError) as error:
        print(f"minikafka compact --exact: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(replies, indent=1))
    ok = True
    for reply in replies:
        for entry in reply.get("results", []):
            ok = ok and entry["status"] in ("cleaned", "nothing_to_clean")
            if not args.json:
                print(f"{entry['topic']}-{entry['partition']}: {entry['status']} (exact), {entry['rounds']} round(s), "
                      f"removed {entry['records_removed']} records / {entry['bytes_removed']} bytes"
                      + (f" ({entry['error']})" if entry.get("error") else ""))
    return 0 if ok else 1
