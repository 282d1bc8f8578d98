"""The cost of TLS + SASL: produce/consume throughput over PLAINTEXT and over SASL_SSL (SCRAM-SHA-256), for minikafka
and Apache Kafka in the same run, with Kafka's own ProducerPerformance/ConsumerPerformance (bench/throughput.py).

    .venv/bin/python -m bench.security_throughput [--records 1000000] [--record-bytes 1024] [--rounds 3] [--no-record]

Each broker gets a PLAINTEXT and a SASL_SSL listener (a test CA's server certificate, PEM key store; one SCRAM user
made at format time), no authorizer; both brokers run for the whole benchmark. After the same warm-up, each of
`--rounds` rounds runs, per broker and protocol, ProducerPerformance (acks=1) on a new topic and then
ConsumerPerformance over the same protocol, with the broker's CPU from /proc over each; the order of brokers and of
protocols alternates between rounds. Printed: medians of MB/s and CPU-s/GB, and per broker the median of each
round's SASL_SSL / PLAINTEXT ratio (the goal: minikafka's ratio no worse than Kafka's). Results are appended to
bench/results/ (results.jsonl, HISTORY.md) unless --no-record.

The default is 1 GB a run (10^6 records of 1 KiB): ConsumerPerformance reads 100 MB in under a second, which
measures its own JVM's warm-up (TLS decryption before the JIT has compiled it) more than either broker. Each round's
topics are deleted after their consume, so disk use stays at one round's worth.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.machine import machine_description
from bench.results_log import BenchResult, append_history, append_results, result
from bench.throughput import (
    Case,
    Measurement,
    create_topic,
    delete_topic,
    run_consumer_perf,
    run_producer_perf,
    with_broker_cpu,
)
from tests.apache_kafka import ApacheKafka
from tests.kafka_jars import KAFKA_VERSION, ensure_kafka_jars
from tests.scram_mini_kafka import ScramMiniKafka
from tests.tls_material import CertificateAuthority

LISTENER = "SASL_SSL"
PROTOCOLS = ("PLAINTEXT", LISTENER)
USER, PASSWORD = "bench", "bench-secret"
BROKERS = ("minikafka", "apache")


@dataclass(frozen=True)
class Security:
    """The files and properties both brokers and the clients share: server PEM key store, CA trust store."""

    broker_properties: dict[str, str]
    client_config: Path

    @staticmethod
    def make(directory: Path) -> Security:
        ca = CertificateAuthority()
        # An unencrypted key: the JVM cannot read a PBES2-encrypted PKCS#8 key from a PEM key store.
        keystore = ca.issue_server().write_pem_keystore(directory / "server.pem")
        truststore = ca.write_pem_truststore(directory / "ca.pem")
        client_config = directory / "client-sasl-ssl.properties"
        client_config.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{USER}" password="{PASSWORD}";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={truststore}\n")
        return Security({
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
        }, client_config)


SCRAM_CREDENTIAL = f"SCRAM-SHA-256=[name={USER},password={PASSWORD}]"
OPS = ("produce", "consume")
# broker -> protocol -> op -> one Measurement per round
Results = dict[str, dict[str, dict[str, list[Measurement]]]]


@dataclass(frozen=True)
class RunningBroker:
    name: str
    pid: int
    bootstraps: dict[str, str]  # protocol -> bootstrap


@contextmanager
def started(name: str, work: Path, security: Security, lib_dir: Path) -> Iterator[RunningBroker]:
    """Start one broker with both listeners."""
    if name == "apache":
        with ApacheKafka(work / "apache", lib_dir=lib_dir, properties=security.broker_properties,
                         listeners={LISTENER: LISTENER}, scram_credentials=[SCRAM_CREDENTIAL]) as kafka:
            assert kafka.process is not None
            yield RunningBroker(name, kafka.process.pid,
                                {"PLAINTEXT": kafka.bootstrap, LISTENER: kafka.bootstrap_for(LISTENER)})
    else:
        with ScramMiniKafka([SCRAM_CREDENTIAL], security.broker_properties, {LISTENER: LISTENER}) as kafka:
            assert kafka.pid is not None
            yield RunningBroker(name, kafka.pid, {"PLAINTEXT": kafka.bootstrap_servers,
                                                  LISTENER: kafka.bootstrap_servers_for(LISTENER)})


def _client_config(protocol: str, security: Security) -> Path | None:
    return security.client_config if protocol == LISTENER else None


def warm_up(broker: RunningBroker, lib_dir: Path, case: Case, security: Security) -> None:
    """The same warm-up for both brokers over both protocols (a fresh JVM is slow until its JIT has compiled the
    produce, fetch and TLS paths)."""
    warm_up_case = Case(case.record_bytes, 1, "1", max(case.num_records // 5, 1000))
    for protocol in PROTOCOLS:
        topic = f"warm-up-{protocol.lower()}"
        create_topic(broker.bootstraps["PLAINTEXT"], topic, 1)
        run_producer_perf(lib_dir, broker.bootstraps[protocol], topic, warm_up_case, _client_config(protocol, security))
        run_consumer_perf(lib_dir, broker.bootstraps[protocol], topic, warm_up_case, _client_config(protocol, security))


def measure_round(broker: RunningBroker, round_index: int, protocols: Sequence[str], lib_dir: Path, case: Case,
                  security: Security, results: Results) -> None:
    """One produce and one consume per protocol on `broker`, each with the broker's CPU over the same window."""
    for protocol in protocols:
        config = _client_config(protocol, security)
        bootstrap = broker.bootstraps[protocol]
        topic = f"security-{protocol.lower()}-{round_index}"
        create_topic(broker.bootstraps["PLAINTEXT"], topic, case.partitions)
        client_args = (lib_dir, bootstrap, topic, case, config)
        produced = with_broker_cpu(broker.pid, case, partial(run_producer_perf, *client_args))
        consumed = with_broker_cpu(broker.pid, case, partial(run_consumer_perf, *client_args))
        delete_topic(broker.bootstraps["PLAINTEXT"], topic)
        print(f"  [{broker.name}] round {round_index + 1} {protocol}: produce {produced.mb_per_s:.1f} MB/s "
              f"{produced.cpu_s_per_gb:.2f} CPU-s/GB, consume {consumed.mb_per_s:.1f} MB/s "
              f"{consumed.cpu_s_per_gb:.2f} CPU-s/GB", flush=True)
        by_op = results.setdefault(broker.name, {}).setdefault(protocol, {})
        by_op.setdefault("produce", []).append(produced)
        by_op.setdefault("consume", []).append(consumed)


def _median(values: Sequence[float]) -> float:
    present = [value for value in values if value == value]
    return statistics.median(present) if present else float("nan")


def _fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:,.{digits}f}"


def table(results: Results) -> str:
    """Medians over the rounds. The throughput ratio is the median of each round's own SASL_SSL / PLAINTEXT pair
    (the two ran back to back), so a slow minute of the shared machine moves both sides of a ratio."""
    lines = ["| broker | op | PLAINTEXT MB/s | SASL_SSL MB/s | SASL_SSL / PLAINTEXT MB/s (paired) "
             "| PLAINTEXT CPU-s/GB | SASL_SSL CPU-s/GB | SASL_SSL / PLAINTEXT CPU |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for broker in ("apache", "minikafka"):
        by_protocol = results.get(broker, {})
        label = "Apache Kafka" if broker == "apache" else "minikafka"
        for op in OPS:
            plain = by_protocol.get("PLAINTEXT", {}).get(op, [])
            secure = by_protocol.get(LISTENER, {}).get(op, [])
            ratios = [s.mb_per_s / p.mb_per_s for p, s in zip(plain, secure, strict=False) if p.mb_per_s > 0]
            plain_cpu = _median([m.cpu_s_per_gb for m in plain])
            secure_cpu = _median([m.cpu_s_per_gb for m in secure])
            lines.append(f"| {label} | {op} | {_fmt(_median([m.mb_per_s for m in plain]))} | "
                         f"{_fmt(_median([m.mb_per_s for m in secure]))} | {_fmt(_median(ratios), 2)} | "
                         f"{_fmt(plain_cpu, 2)} | {_fmt(secure_cpu, 2)} | {_fmt(secure_cpu / plain_cpu, 2)} |")
    return "\n".join(lines)


def rounds_table(results: Results) -> str:
    """Every round's MB/s, for the record."""
    lines = ["| broker | protocol | op | MB/s per round | CPU-s/GB per round |", "|---|---|---|---|---|"]
    for broker, by_protocol in sorted(results.items()):
        for protocol, by_op in by_protocol.items():
            for op, measured in by_op.items():
                lines.append(f"| {broker} | {protocol} | {op} | {', '.join(_fmt(m.mb_per_s) for m in measured)} | "
                             f"{', '.join(_fmt(m.cpu_s_per_gb, 2) for m in measured)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.security_throughput",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (brokers and protocols alternate)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    command = "python -m bench.security_throughput " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    case = Case(args.record_bytes, args.partitions, "1", args.records)
    lib_dir = ensure_kafka_jars()
    results: Results = {}
    load_before = os.getloadavg()[0]
    started_s = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minikafka-security-bench-") as work_dir, ExitStack() as stack:
        work = Path(work_dir)
        security = Security.make(work)
        brokers = [stack.enter_context(started(name, work, security, lib_dir)) for name in BROKERS]
        for broker in brokers:
            print(f"[{broker.name}] warm-up", flush=True)
            warm_up(broker, lib_dir, case, security)
        for round_index in range(args.rounds):
            # Alternate which broker and which protocol go first, so neither always gets the quieter minute.
            order = brokers if round_index % 2 == 0 else brokers[::-1]
            protocols = PROTOCOLS if round_index % 2 == 0 else PROTOCOLS[::-1]
            for broker in order:
                measure_round(broker, round_index, protocols, lib_dir, case, security, results)
    elapsed_s = time.monotonic() - started_s
    rendered = table(results) + "\n\nEvery round:\n\n" + rounds_table(results)
    load = f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    print(rendered)
    print(load)
    if not args.no_record:
        record(command, case, args.rounds, rendered, elapsed_s, load)
        append_results(security_results(results, command))
    return 0


def record(command: str, case: Case, rounds: int, rendered: str, elapsed_s: float, load: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = [
        f"\n## Security: SASL_SSL vs PLAINTEXT, {stamp}\n",
        f"- command: `{command.strip()}` (from the repo root, with `.venv/bin/python`)",
        f"- machine: {machine_description()}",
        f"- Apache Kafka {KAFKA_VERSION} (single KRaft node, -Xmx512m) and minikafka, both running, {rounds} "
        f"interleaved rounds; {case.num_records} records of {case.record_bytes} B, {case.partitions} partition(s), "
        "acks=1; "
        "SASL_SSL = TLS (PEM key store, RSA 2048 server key, default protocol and cipher settings) + SCRAM-SHA-256; "
        "produce = ProducerPerformance, consume = ConsumerPerformance fetch MB/s, both over the same protocol; "
        "CPU = the broker process tree's utime+stime from /proc over each client run",
        f"- wall time: {elapsed_s:.0f} s; {load}",
        "",
        rendered,
        "",
    ]
    append_history("\n".join(section))


def security_results(results: Results, command: str) -> list[BenchResult]:
    """Per op minikafka's paired SASL_SSL / PLAINTEXT MB/s against Kafka's, for bench/results/results.jsonl."""
    def paired(broker: str, op: str) -> float:
        by_protocol = results.get(broker, {})
        plain = by_protocol.get("PLAINTEXT", {}).get(op, [])
        secure = by_protocol.get(LISTENER, {}).get(op, [])
        return _median([s.mb_per_s / p.mb_per_s for p, s in zip(plain, secure, strict=False) if p.mb_per_s > 0])

    figures = []
    for op in OPS:
        ours, theirs = paired("minikafka", op), paired("apache", op)
        if ours == ours:
            figures.append(result("sasl-ssl-cost", f"{op} MB/s SASL_SSL / PLAINTEXT", ours, "ratio",
                                  theirs if theirs == theirs else None, command=command.strip()))
    return figures


if __name__ == "__main__":
    sys.exit(main())
