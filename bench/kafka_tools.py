"""`python -m bench.kafka_tools [BIN_DIR]`: Apache Kafka's command-line tools (`kafka-configs`, `kafka-topics`,
`kafka-acls`, `kafka-share-groups`, `kafka-consumer-groups`, ...) as commands in BIN_DIR (default
`.cache/kafka-tools/bin` in the clone), each running the tool from Apache Kafka's official jars, fetched once with
Maven as the interop tests fetch them (bench/kafka_jars.py). Needs Java 17+ and Maven. Afterwards:

    export PATH="$PWD/.cache/kafka-tools/bin:$PATH"
    kafka-topics --bootstrap-server 127.0.0.1:9092 --list

The commands are named as Kafka's `bin/*.sh` without `.sh` (the names Kafka's docs and Docker images use).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from bench.kafka_jars import (
    KAFKA_VERSION,
    REPO_ROOT,
    KafkaHarnessError,
    ensure_kafka_jars,
    find_main_class,
    java_command,
)

DEFAULT_BIN_DIR = REPO_ROOT / ".cache" / "kafka-tools" / "bin"

#: command -> its main class in Kafka's bin/*.sh (classes that moved between versions list both)
TOOLS: dict[str, tuple[str, ...]] = {
    "kafka-acls": ("kafka.admin.AclCommand", "org.apache.kafka.tools.AclCommand"),
    "kafka-broker-api-versions": ("org.apache.kafka.tools.BrokerApiVersionsCommand",),
    "kafka-client-metrics": ("org.apache.kafka.tools.ClientMetricsCommand",),
    "kafka-cluster": ("org.apache.kafka.tools.ClusterTool",),
    "kafka-configs": ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand"),
    "kafka-console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer",),
    "kafka-console-producer": ("org.apache.kafka.tools.ConsoleProducer",),
    "kafka-console-share-consumer": ("org.apache.kafka.tools.consumer.ConsoleShareConsumer",),
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",),
    "kafka-consumer-perf-test": ("org.apache.kafka.tools.ConsumerPerformance",),
    "kafka-delete-records": ("org.apache.kafka.tools.DeleteRecordsCommand",),
    "kafka-dump-log": ("kafka.tools.DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments"),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand",),
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell",),
    "kafka-log-dirs": ("org.apache.kafka.tools.LogDirsCommand",),
    "kafka-producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance",),
    "kafka-share-groups": ("org.apache.kafka.tools.consumer.group.ShareGroupCommand",),
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand",),
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
}


def write_tools(bin_dir: Path, lib_dir: Path) -> list[Path]:
    """One executable `sh` script per tool whose main class the jars have; the paths written."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, candidates in TOOLS.items():
        try:
            main_class = find_main_class(lib_dir, *candidates)
        except KafkaHarnessError:
            continue  # not in this Kafka version
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec {shlex.join(java_command(lib_dir, main_class, []))} "$@"\n')
        script.chmod(0o755)
        written.append(script)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_tools", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin_dir", nargs="?", type=Path, default=DEFAULT_BIN_DIR,
                        help=f"where the commands go (default: {DEFAULT_BIN_DIR})")
    args = parser.parse_args(argv)
    try:
        lib_dir = ensure_kafka_jars()
    except KafkaHarnessError as error:
        print(f"kafka_tools: {error}", file=sys.stderr)
        return 1
    written = write_tools(args.bin_dir.absolute(), lib_dir)
    print(f"{len(written)} Apache Kafka {KAFKA_VERSION} commands in {args.bin_dir.absolute()}: "
          f"{' '.join(path.name for path in written)}")
    print(f'export PATH="{args.bin_dir.absolute()}:$PATH"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
