"""The cost of TLS + SASL: produce/consume throughput over PLAINTEXT and over SASL_SSL (SCRAM-SHA-256), for minikafka
and Apache Kafka in the same run, with Kafka's own ProducerPerformance/ConsumerPerformance (bench/throughput.py).

    .venv/bin/python -m bench.security_throughput [--records 100000] [--record-bytes 1024] [--no-record]

Each broker gets a PLAINTEXT and a SASL_SSL listener (a test CA's server certificate, PEM key store; one SCRAM user
made at format time), no authorizer. Per broker and protocol: one topic, ProducerPerformance (acks=1), then
ConsumerPerformance over the same protocol. Printed: MB/s for each, and SASL_SSL / PLAINTEXT per broker (the
goal: minikafka's ratio no worse than Kafka's). Results are appended to BENCHMARKS.md unless --no-record.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.apache_kafka import ApacheKafka
from bench.kafka_jars import KAFKA_VERSION, ensure_kafka_jars
from bench.machine import machine_description
from bench.throughput import BENCHMARKS_MD, Case, Measurement, create_topic, run_consumer_perf, run_producer_perf
from minikafka.testing import MiniKafka
from tests.tls_material import CertificateAuthority

LISTENER = "SASL_SSL"
PROTOCOLS = ("PLAINTEXT", LISTENER)
USER, PASSWORD = "bench", "bench-secret"
BROKERS = ("minikafka", "apache")


class ScramMiniKafka(MiniKafka):
    """`MiniKafka` started with `serve --add-scram` for each of `scram_credentials` (Kafka's `kafka-storage format
    --add-scram` syntax), so SCRAM users exist before the first connection. Not thread-safe, as MiniKafka."""

    def __init__(self, scram_credentials: Sequence[str], config: dict[str, str], listeners: dict[str, str]) -> None:
        super().__init__(config, listeners=listeners)
        self.scram_credentials = list(scram_credentials)

    def command(self) -> list[str]:
        return super().command() + [arg for credential in self.scram_credentials for arg in ("--add-scram", credential)]


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
# broker name -> protocol -> (produce, consume)
Results = dict[str, dict[str, tuple[Measurement, Measurement]]]


@contextmanager
def started(name: str, work: Path, security: Security) -> Iterator[dict[str, str]]:
    """Start one broker with both listeners; yields protocol -> bootstrap."""
    if name == "apache":
        with ApacheKafka(work / "apache", properties=security.broker_properties, listeners={LISTENER: LISTENER},
                         scram_credentials=[SCRAM_CREDENTIAL]) as kafka:
            yield {"PLAINTEXT": kafka.bootstrap, LISTENER: kafka.bootstrap_for(LISTENER)}
    else:
        with ScramMiniKafka([SCRAM_CREDENTIAL], security.broker_properties, {LISTENER: LISTENER}) as kafka:
            yield {"PLAINTEXT": kafka.bootstrap_servers, LISTENER: kafka.bootstrap_servers_for(LISTENER)}


def measure(name: str, bootstraps: dict[str, str], lib_dir: Path, case: Case,
            security: Security) -> dict[str, tuple[Measurement, Measurement]]:
    results: dict[str, tuple[Measurement, Measurement]] = {}
    # Same warm-up for both brokers (a fresh JVM is slow until the JIT has compiled the hot paths).
    warm_up = Case(case.record_bytes, 1, "1", max(case.num_records // 5, 1000))
    for protocol in PROTOCOLS:
        config = security.client_config if protocol == LISTENER else None
        topic = f"warm-up-{protocol.lower()}"
        create_topic(bootstraps["PLAINTEXT"], topic, 1)
        run_producer_perf(lib_dir, bootstraps[protocol], topic, warm_up, config)
    for protocol in PROTOCOLS:
        config = security.client_config if protocol == LISTENER else None
        topic = f"security-{protocol.lower()}"
        create_topic(bootstraps["PLAINTEXT"], topic, case.partitions)
        print(f"[{name}] {protocol}: {case.num_records} records of {case.record_bytes} B", flush=True)
        produced = run_producer_perf(lib_dir, bootstraps[protocol], topic, case, config)
        consumed = run_consumer_perf(lib_dir, bootstraps[protocol], topic, case, config)
        print(f"  produce {produced.mb_per_s:.1f} MB/s, consume {consumed.mb_per_s:.1f} MB/s", flush=True)
        results[protocol] = (produced, consumed)
    return results


def _fmt(value: float) -> str:
    return "n/a" if value != value else f"{value:,.1f}"


def _ratio(numerator: float, denominator: float) -> str:
    if numerator != numerator or denominator != denominator or denominator == 0:
        return "n/a"
    return f"{numerator / denominator:.2f}"


def table(results: Results) -> str:
    lines = ["| broker | op | PLAINTEXT MB/s | SASL_SSL MB/s | SASL_SSL / PLAINTEXT |", "|---|---|---:|---:|---:|"]
    missing = (Measurement.missing(), Measurement.missing())
    for broker in ("apache", "minikafka"):
        by_protocol = results.get(broker, {})
        plain, secure = by_protocol.get("PLAINTEXT", missing), by_protocol.get(LISTENER, missing)
        label = "Apache Kafka" if broker == "apache" else "minikafka"
        for slot, op in enumerate(("produce", "consume")):
            lines.append(f"| {label} | {op} | {_fmt(plain[slot].mb_per_s)} | {_fmt(secure[slot].mb_per_s)} | "
                         f"{_ratio(secure[slot].mb_per_s, plain[slot].mb_per_s)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.security_throughput",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--no-record", action="store_true", help="do not append to BENCHMARKS.md")
    args = parser.parse_args(argv)
    command = "python -m bench.security_throughput " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    case = Case(args.record_bytes, args.partitions, "1", args.records)
    lib_dir = ensure_kafka_jars()
    results: Results = {}
    started_s = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minikafka-security-bench-") as work_dir:
        work = Path(work_dir)
        security = Security.make(work)
        for name in BROKERS:
            with started(name, work, security) as bootstraps:
                results[name] = measure(name, bootstraps, lib_dir, case, security)
    elapsed_s = time.monotonic() - started_s
    rendered = table(results)
    print(rendered)
    if not args.no_record:
        record(command, case, rendered, elapsed_s)
    return 0


def record(command: str, case: Case, rendered: str, elapsed_s: float) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = [
        f"\n## Security: SASL_SSL vs PLAINTEXT, {stamp}\n",
        f"- command: `{command.strip()}` (from the repo root, with `.venv/bin/python`)",
        f"- machine: {machine_description()}",
        f"- Apache Kafka {KAFKA_VERSION} (single KRaft node, -Xmx512m) and minikafka, one after the other in the same "
        f"run; {case.num_records} records of {case.record_bytes} B, {case.partitions} partition(s), acks=1; "
        "SASL_SSL = TLS (PEM key store, RSA 2048 server key, default protocol and cipher settings) + SCRAM-SHA-256; "
        "produce = ProducerPerformance, consume = ConsumerPerformance fetch MB/s, both over the same protocol",
        f"- wall time: {elapsed_s:.0f} s",
        "",
        rendered,
        "",
    ]
    with open(BENCHMARKS_MD, "a") as out:
        out.write("\n".join(section))


if __name__ == "__main__":
    sys.exit(main())
