"""Deterministic field values for every share-group message at every version Apache Kafka 4.3.1 supports, in the
layout of Kafka's generated `<Message>DataJsonConverter` (camelCase names, Uuid and bytes as base64), and the
checks that compare a decoded message with them.

`python tests/protocol/share_vectors/schema_values.py` regenerates `vectors.json`: it feeds these values to
`ShareSchemaVectors.java`, which encodes them with kafka-clients 4.3.1's own generated message classes, and stores
Kafka's bytes next to the values. The test decodes Kafka's bytes with minikafka's classes and encodes them back.
"""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
import tempfile
import uuid
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VECTORS = HERE / "vectors.json"

#: Message names (without Request/Response) added for issue 23.
SHARE_MESSAGES = (
    "ShareGroupHeartbeat",
    "ShareGroupDescribe",
    "ShareFetch",
    "ShareAcknowledge",
    "InitializeShareGroupState",
    "ReadShareGroupState",
    "WriteShareGroupState",
    "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
    "DescribeShareGroupOffsets",
    "AlterShareGroupOffsets",
    "DeleteShareGroupOffsets",
)

#: Variant 0 fills every field (tagged ones too) with non-default values and two-element arrays; variant 1 sets
#: nullable fields to null and leaves arrays empty.
VARIANTS = (0, 1)


def json_name(field: Any) -> str:
    """Kafka's JsonConverter key for a field: its schema name with a lower-case first letter."""
    return field._name[0].lower() + field._name[1:]


def _uuid_text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _simple_value(rng: random.Random, type_str: str) -> Any:
    if type_str == "bool":
        return True
    if type_str == "int8":
        return rng.randint(-128, 127)
    if type_str == "int16":
        return rng.randint(-(2**15), 2**15 - 1)
    if type_str == "uint16":
        return rng.randint(1, 2**16 - 1)
    if type_str == "int32":
        return rng.randint(-(2**31), 2**31 - 1)
    if type_str == "int64":
        return rng.randint(-(2**63), 2**63 - 1)
    if type_str == "float64":
        return rng.random() * 1000
    if type_str == "string":
        return "s-" + "".join(rng.choice("abcdefghij-é") for _ in range(rng.randint(1, 12)))
    if type_str in ("bytes", "records"):
        return base64.b64encode(rng.randbytes(rng.randint(1, 20))).decode()
    if type_str == "uuid":
        return _uuid_text(rng.randbytes(16))
    raise ValueError(f"no value generator for {type_str}")


def struct_values(fields: Any, version: int, variant: int, rng: random.Random) -> dict[str, Any]:
    """Kafka-JSON values for the fields of one struct (kafka-python's parsed fields) valid at `version`."""
    out: dict[str, Any] = {}
    for field in fields:
        if not field.for_version_q(version):
            continue
        if variant == 1 and field.tagged_field_q(version):
            continue
        if variant == 1 and field.nullable_for_version_q(version):
            out[json_name(field)] = None
            continue
        if field.is_struct():
            out[json_name(field)] = struct_values(field._fields, version, variant, rng)
        elif field.is_struct_array():
            count = 2 if variant == 0 else 0
            out[json_name(field)] = [struct_values(field._fields, version, variant, rng) for _ in range(count)]
        elif field.is_array():
            count = 2 if variant == 0 else 0
            out[json_name(field)] = [_simple_value(rng, field.type_str[2:]) for _ in range(count)]
        else:
            out[json_name(field)] = _simple_value(rng, field.type_str)
    return out


def assert_matches(fields: Any, version: int, expected: dict[str, Any], decoded: Any, path: str = "") -> None:
    """Field-by-field comparison of a decoded kafka-python message with Kafka-JSON values."""
    seen = set()
    for field in fields:
        if not field.for_version_q(version):
            continue
        name = json_name(field)
        where = f"{path}.{name}"
        actual = getattr(decoded, field.name)
        if name not in expected:  # a tagged field left at its default
            assert actual == field.default, where
            continue
        seen.add(name)
        want = expected[name]
        if want is None:
            assert actual is None, where
        elif field.is_struct():
            assert_matches(field._fields, version, want, actual, where)
        elif field.is_struct_array():
            assert len(actual) == len(want), where
            for i, (w, a) in enumerate(zip(want, actual, strict=True)):
                assert_matches(field._fields, version, w, a, f"{where}[{i}]")
        elif field.is_array():
            assert [_normalise(field.type_str[2:], v) for v in actual] == [
                _normalise(field.type_str[2:], v, kafka_json=True) for v in want
            ], where
        else:
            assert _normalise(field.type_str, actual) == _normalise(field.type_str, want, kafka_json=True), where
    assert seen == set(expected), f"{path}: fields not decoded: {set(expected) - seen}"


def _normalise(type_str: str, value: Any, kafka_json: bool = False) -> Any:
    if type_str == "uuid":
        if kafka_json:
            return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "=="))
        return value
    if type_str in ("bytes", "records"):
        if kafka_json:
            return base64.b64decode(value)
        return bytes(value)
    return value


def message_classes(name: str) -> tuple[Any, Any]:
    from minikafka.protocol import schemas

    return getattr(schemas, name + "Request"), getattr(schemas, name + "Response")


def all_cases() -> list[dict[str, Any]]:
    """Every (message, version, variant) with its values; the random seed depends only on the case."""
    cases = []
    for name in SHARE_MESSAGES:
        for cls in message_classes(name):
            for version in range(cls.valid_versions[0], cls.valid_versions[1] + 1):
                for variant in VARIANTS:
                    message = cls.name
                    rng = random.Random(zlib.crc32(f"{message}/{version}/{variant}".encode()))
                    data = struct_values(cls._struct._fields, version, variant, rng)
                    cases.append({"message": message, "version": version, "variant": variant, "data": data})
    return cases


def regenerate(classpath: str) -> None:
    """Encode all_cases() with Kafka's classes (`classpath`: kafka-clients 4.3.1 and jackson) into vectors.json."""
    cases = all_cases()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["javac", "-d", tmp, "-cp", classpath, str(HERE / "ShareSchemaVectors.java")], check=True)
        lines = "".join(json.dumps(case) + "\n" for case in cases)
        result = subprocess.run(
            ["java", "-cp", f"{tmp}:{classpath}", "ShareSchemaVectors"],
            input=lines,
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode:
        raise RuntimeError(result.stderr)
    hexes = result.stdout.split()
    assert len(hexes) == len(cases), result.stderr
    for case, hex_bytes in zip(cases, hexes, strict=True):
        case["kafka_bytes_hex"] = hex_bytes
    VECTORS.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    regenerate(sys.argv[1])
