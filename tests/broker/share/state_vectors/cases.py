"""`__share_group_state` records to check minikafka's codec against, and `regenerate` which serializes them with
Apache Kafka 4.3.1's own `ShareCoordinatorRecordSerde` (`ShareStateRecordVectors.java`) into `vectors.json`:

    python tests/broker/share/state_vectors/cases.py <classpath: kafka-share-coordinator, kafka-coordinator-common,
        kafka-server-common, kafka-clients 4.3.1, jackson-databind/core/annotations>
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VECTORS = HERE / "vectors.json"
TOPIC_A = uuid.UUID("3f2b6c1e-8d4a-4f0e-9b57-2c1d0e6a7f11")
TOPIC_B = uuid.UUID("00000000-0000-0000-0000-0000000000ff")


def _key(group: str, topic: uuid.UUID, partition: int) -> dict[str, Any]:
    topic_text = base64.urlsafe_b64encode(topic.bytes).decode().rstrip("=")
    return {"groupId": group, "topicId": topic_text, "partition": partition}


def _batches(*batches: tuple[int, int, int, int]) -> list[dict[str, int]]:
    return [{"firstOffset": f, "lastOffset": last, "deliveryState": s, "deliveryCount": c} for f, last, s, c in batches]


CASES: list[dict[str, Any]] = [
    {
        "type": "snapshot",
        "key": _key("share-group", TOPIC_A, 0),
        "value": {
            "snapshotEpoch": 3,
            "stateEpoch": 1,
            "leaderEpoch": 7,
            "startOffset": 120,
            "deliveryCompleteCount": 5,
            "createTimestamp": 1_764_000_000_000,
            "writeTimestamp": 1_764_000_000_123,
            "stateBatches": _batches((120, 129, 2, 1), (130, 130, 4, 5), (131, 140, 0, 2)),
        },
    },
    {
        "type": "snapshot",
        "key": _key("grüppe-ünïcode", TOPIC_B, 49),
        "value": {
            "snapshotEpoch": 0,
            "stateEpoch": 0,
            "leaderEpoch": 0,
            "startOffset": -1,
            "deliveryCompleteCount": -1,
            "createTimestamp": 0,
            "writeTimestamp": 0,
            "stateBatches": [],
        },
    },
    {
        "type": "snapshot",
        "key": _key("g", TOPIC_A, 2_147_483_647),
        "value": {
            "snapshotEpoch": 2_147_483_647,
            "stateEpoch": -1,
            "leaderEpoch": -1,
            "startOffset": 9_223_372_036_854_775_000,
            "deliveryCompleteCount": 0,
            "createTimestamp": -1,
            "writeTimestamp": -1,
            "stateBatches": _batches(*((i * 10, i * 10 + 9, (0, 2, 4)[i % 3], i % 7) for i in range(70))),
        },
    },
    {
        "type": "update",
        "key": _key("share-group", TOPIC_A, 0),
        "value": {
            "snapshotEpoch": 3,
            "leaderEpoch": 7,
            "startOffset": -1,
            "deliveryCompleteCount": -1,
            "stateBatches": _batches((141, 150, 0, 1), (151, 151, 4, 3)),
        },
    },
    {
        "type": "update",
        "key": _key("share-group", TOPIC_A, 0),
        "value": {
            "snapshotEpoch": 3,
            "leaderEpoch": -1,
            "startOffset": 152,
            "deliveryCompleteCount": 32_000,
            "stateBatches": _batches((152, 152, 2, 32_767)),
        },
    },
    {"type": "tombstone", "key": _key("share-group", TOPIC_A, 0)},
]


def regenerate(classpath: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["javac", "-d", tmp, "-cp", classpath, str(HERE / "ShareStateRecordVectors.java")], check=True)
        result = subprocess.run(
            ["java", "-cp", f"{tmp}:{classpath}", "ShareStateRecordVectors"],
            input="".join(json.dumps(case) + "\n" for case in CASES),
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode:
        raise RuntimeError(result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == len(CASES), result.stderr
    out = []
    for case, line in zip(CASES, lines, strict=True):
        key_hex, value_hex = line.split(" ")
        out.append({**case, "kafka_key_hex": key_hex, "kafka_value_hex": None if value_hex == "-" else value_hex})
    VECTORS.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    regenerate(sys.argv[1])
