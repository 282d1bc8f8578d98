"""kcat (librdkafka's CLI) produces and consumes against the broker; skipped with a reason when not installed."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.client_drivers import consume_confluent, create_topic

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = [
    pytest.mark.skipif(KCAT is None, reason="kcat is not on PATH (apt-get install kcat to run this test)"),
    pytest.mark.timeout(120),
]


def _kcat(*args: str, stdin: str | None = None) -> str:
    assert KCAT is not None
    result = subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"kcat {' '.join(args)} exited {result.returncode}:\n{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produces_and_consumes_keyed_records(broker: BrokerProcess, codec: str) -> None:
    topic = f"kcat-{codec}"
    create_topic(broker.bootstrap, topic, 2)
    lines = [f"key{i}:value {i} ✓" for i in range(500)]
    _kcat("-b", broker.bootstrap, "-P", "-t", topic, "-K", ":", "-z", codec, "-X", "acks=all",
          stdin="\n".join(lines) + "\n")

    out = _kcat("-b", broker.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                "-f", "%p|%o|%k|%s\n")
    rows = [line.split("|") for line in out.splitlines()]
    assert sorted((k, v) for _, _, k, v in rows) == sorted(tuple(line.split(":", 1)) for line in lines)
    for partition in ("0", "1"):
        offsets = [int(o) for p, o, _, _ in rows if p == partition]
        assert offsets == list(range(len(offsets))), f"partition {partition}: offsets not contiguous"

    # What kcat wrote, a different client (confluent-kafka's consumer) reads back the same.
    counts = {p: sum(1 for row in rows if row[0] == str(p)) for p in (0, 1)}
    records = consume_confluent(broker.bootstrap, topic, counts)
    assert sorted((r.key, r.value) for r in records) == sorted(
        (k.encode(), v.encode()) for _, _, k, v in rows)


def test_kcat_metadata_lists_the_broker_and_topic(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "kcat-meta", 3)
    metadata = json.loads(_kcat("-b", broker.bootstrap, "-L", "-J", "-t", "kcat-meta"))
    assert [b["name"] for b in metadata["brokers"]] == [broker.bootstrap]
    (topic,) = metadata["topics"]
    assert topic["topic"] == "kcat-meta" and len(topic["partitions"]) == 3
