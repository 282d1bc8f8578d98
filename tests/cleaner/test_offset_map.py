from __future__ import annotations

import struct
from hashlib import blake2b

import pytest

from cleaner.offset_map import KAFKA_SLOT_BYTES, SLOT_BYTES, OffsetMap, OffsetMapFullError

MIB = 1024 * 1024


def kafka_capacity(memory_bytes: int, load_factor: float = 0.9) -> int:
    return int((memory_bytes // KAFKA_SLOT_BYTES) * load_factor)


def test_S11_capacity_arithmetic_and_density_vs_kafka() -> None:
    offset_map = OffsetMap(128 * MIB, 0.9)
    assert SLOT_BYTES == 16
    assert offset_map.slots == 8_388_608
    assert offset_map.capacity == 7_549_747
    assert offset_map.memory_bytes == 128 * MIB
    assert kafka_capacity(128 * MIB) == 5_033_164
    assert offset_map.capacity >= 1.5 * kafka_capacity(128 * MIB)
    keys_per_mib = offset_map.capacity / 128
    assert keys_per_mib >= 1.5 * 39_321


@pytest.mark.parametrize("memory_bytes", [2 * MIB, 16 * MIB, 2_147_483_647 // 64])
def test_density_at_least_one_and_a_half_kafka(memory_bytes: int) -> None:
    offset_map = OffsetMap(memory_bytes, 0.9)
    assert offset_map.capacity + 1 >= 1.5 * kafka_capacity(memory_bytes)


def test_put_get_overwrite_and_absent() -> None:
    offset_map = OffsetMap(4096, 0.9)
    assert offset_map.get(b"k") == -1
    offset_map.put(b"k", 10)
    offset_map.put(b"", 11)  # the empty key is a real key
    offset_map.put(b"k", 12)
    assert offset_map.get(b"k") == 12
    assert offset_map.get(b"") == 11
    assert offset_map.get(b"other") == -1
    assert offset_map.size == 2
    assert offset_map.latest_offset == 12
    assert offset_map.utilization == 2 / offset_map.slots
    assert offset_map.lookups == 7


def test_full_map_refuses_new_keys_but_caller_sees_is_full_first() -> None:
    offset_map = OffsetMap(2 * SLOT_BYTES, 0.75)  # Kafka's testPartialSegmentClean map: 2 slots, 1 entry
    assert (offset_map.slots, offset_map.capacity) == (2, 1)
    offset_map.put(b"k0", 0)
    assert offset_map.is_full
    offset_map.put(b"k0", 1)  # overwriting an existing key needs no slot
    assert offset_map.get(b"k0") == 1
    with pytest.raises(OffsetMapFullError):
        offset_map.put(b"k1", 2)
    assert offset_map.get(b"k1") == -1
    assert offset_map.size == 1
    assert offset_map.latest_offset == 1


def test_load_factor_above_one_still_keeps_an_empty_slot() -> None:
    offset_map = OffsetMap(4 * SLOT_BYTES, 1.5)
    assert offset_map.capacity == 3
    for i in range(3):
        offset_map.put(b"k%d" % i, i)
    assert offset_map.get(b"absent") == -1  # terminates: one slot stays empty


def test_map_too_small_for_one_key_is_rejected() -> None:
    with pytest.raises(ValueError):
        OffsetMap(SLOT_BYTES, 0.9)


def test_clear_forgets_keys_and_resets_counters() -> None:
    offset_map = OffsetMap(64 * SLOT_BYTES, 0.9)
    for i in range(50):
        offset_map.put(b"k%d" % i, 1000 + i)
    offset_map.clear()
    assert offset_map.size == 0 and offset_map.latest_offset == -1
    assert offset_map.lookups == 0 and offset_map.collisions == 0
    assert all(offset_map.get(b"k%d" % i) == -1 for i in range(50))
    offset_map.put(b"k1", 5)  # a new round may start below the previous base
    assert offset_map.get(b"k1") == 5


def test_offsets_are_relative_to_the_round_base_within_32_bits() -> None:
    offset_map = OffsetMap(64 * SLOT_BYTES, 0.9)
    base = 10**12
    offset_map.put(b"a", base)
    top = base + 2**32 - 1
    assert offset_map.fits_offset(top)
    offset_map.put(b"b", top)
    assert offset_map.get(b"b") == top
    assert not offset_map.fits_offset(top + 1)
    assert not offset_map.fits_offset(base - 1)
    with pytest.raises(ValueError):
        offset_map.put(b"c", top + 1)


def test_update_latest_offset() -> None:
    offset_map = OffsetMap(64 * SLOT_BYTES, 0.9)
    offset_map.put(b"a", 3)
    offset_map.update_latest_offset(9)
    assert offset_map.latest_offset == 9


def _digest_parts(key: bytes) -> tuple[int, int, int]:
    high, low, home = struct.unpack("<QII", blake2b(key, digest_size=16).digest())
    return high, low, home


def test_no_false_deletes_on_near_collision_keys() -> None:
    """Keys that share their home slot, and keys that share 64 of the 96 fingerprint bits, stay distinct."""
    slots = 1024
    offset_map = OffsetMap(slots * SLOT_BYTES, 0.9)
    by_home: dict[int, list[bytes]] = {}
    for i in range(200_000):
        key = b"near-%d" % i
        _, _, home = _digest_parts(key)
        by_home.setdefault((home * slots) >> 32, []).append(key)
    crowded = max(by_home.values(), key=len)
    assert len(crowded) >= 200
    same_home = crowded[:200]
    for offset, key in enumerate(same_home):
        offset_map.put(key, offset)
    assert offset_map.collisions > 0
    for offset, key in enumerate(same_home):
        assert offset_map.get(key) == offset
    # Keys probing through that run but never inserted read absent (a false match = a false delete).
    for key in crowded[200:]:
        assert offset_map.get(key) == -1
    assert offset_map.false_match_bound < 1e-20


def test_keys_differing_only_in_low_fingerprint_bits_are_distinct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Crafted digests: same 64-bit high fingerprint and home slot, different bits 64..95."""
    import cleaner.offset_map as module

    digests = {
        b"x": struct.pack("<QII", 0xDEADBEEF, 1, 7),
        b"y": struct.pack("<QII", 0xDEADBEEF, 2, 7),
        b"z": struct.pack("<QII", 0, 1, 7),  # an all-zero high half must not look like an empty slot
    }

    class FakeHash:
        def __init__(self, key: bytes, digest_size: int) -> None:
            self._digest = digests[key]

        def digest(self) -> bytes:
            return self._digest

    monkeypatch.setattr(module, "blake2b", FakeHash)
    offset_map = OffsetMap(8 * SLOT_BYTES, 0.9)
    offset_map.put(b"x", 100)
    assert offset_map.get(b"y") == -1
    offset_map.put(b"y", 101)
    offset_map.put(b"z", 102)
    assert (offset_map.get(b"x"), offset_map.get(b"y"), offset_map.get(b"z")) == (100, 101, 102)
    assert offset_map.size == 3


def test_many_keys_round_trip_at_full_load() -> None:
    offset_map = OffsetMap(20_000 * SLOT_BYTES, 0.9)
    keys = [b"key-%d" % i for i in range(offset_map.capacity)]
    for offset, key in enumerate(keys):
        offset_map.put(key, offset * 2)
    assert offset_map.is_full
    assert offset_map.utilization == pytest.approx(0.9, abs=1e-4)
    for offset, key in enumerate(keys):
        assert offset_map.get(key) == offset * 2
    assert offset_map.get(b"missing") == -1


def test_put_keys_fast_path_matches_put() -> None:
    offset_map = OffsetMap(256 * SLOT_BYTES, 0.9)
    pairs = [(10, b"a"), (11, None), (12, b"b"), (13, b"a"), (14, b"")]
    assert offset_map.put_keys(iter(pairs), min_offset=11) == 5
    assert offset_map.lookups == 3
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"")) == (13, 12, 14)
    assert offset_map.size == 3 and offset_map.latest_offset == 14
    reference = OffsetMap(256 * SLOT_BYTES, 0.9)
    for offset, key in pairs[2:]:
        assert key is not None
        reference.put(key, offset)
    assert reference.size == offset_map.size and reference.lookups == 3
    assert offset_map.put_keys(iter([(9, b"c")]), min_offset=11) == 1
    assert offset_map.get(b"c") == -1
