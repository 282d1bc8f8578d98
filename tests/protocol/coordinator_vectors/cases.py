"""Coordinator record cases for `CoordinatorRecordSchema`: field values for every share-group record of
`__consumer_offsets` and every `__share_group_state` record, and `regenerate`, which serializes them with Apache
Kafka 4.3.1's own GroupCoordinatorRecordSerde/ShareCoordinatorRecordSerde (`CoordinatorRecordVectors.java`) into
`vectors.json`:

    python -m tests.protocol.coordinator_vectors.cases <classpath: kafka-group-coordinator, kafka-share-coordinator,
        kafka-coordinator-common, kafka-server-common, kafka-clients 4.3.1, jackson, slf4j-api>
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

from minikafka.protocol.coordinator_record_schema import CoordinatorRecordSchema
from tests.protocol.share_vectors.schema_values import struct_values

HERE = Path(__file__).resolve().parent
VECTORS = HERE / "vectors.json"

RECORDS = {
    "ShareGroupMemberMetadata": "group",
    "ShareGroupMetadata": "group",
    "ShareGroupTargetAssignmentMetadata": "group",
    "ShareGroupTargetAssignmentMember": "group",
    "ShareGroupCurrentMemberAssignment": "group",
    "ShareGroupStatePartitionMetadata": "group",
    "ShareSnapshot": "share",
    "ShareUpdate": "share",
}


def all_cases() -> list[dict[str, Any]]:
    cases = []
    for name, package in RECORDS.items():
        schema = CoordinatorRecordSchema(name)
        for variant in (0, 1):
            rng = random.Random(zlib.crc32(f"{name}/{variant}".encode()))
            cases.append(
                {
                    "package": package,
                    "name": name,
                    "variant": variant,
                    "key": struct_values(schema.key_fields, 0, 0, rng),
                    "value": struct_values(schema.value_fields, 0, variant, rng),
                }
            )
    return cases


def regenerate(classpath: str) -> None:
    cases = all_cases()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["javac", "-d", tmp, "-cp", classpath, str(HERE / "CoordinatorRecordVectors.java")], check=True)
        result = subprocess.run(
            ["java", "-cp", f"{tmp}:{classpath}", "CoordinatorRecordVectors"],
            input="".join(json.dumps(case) + "\n" for case in cases),
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode:
        raise RuntimeError(result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == len(cases), result.stderr
    for case, line in zip(cases, lines, strict=True):
        case["kafka_key_hex"], case["kafka_value_hex"] = line.split(" ")
    VECTORS.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    regenerate(sys.argv[1])
