from __future__ import annotations

import struct
import sys
import tracemalloc
from array import array
from hashlib import blake2b

import pytest

from minikafka.cleaner.offset_map import (
    FINGERPRINT_BITS,
    KAFKA_SLOT_BYTES,
    MAX_RELATIVE_OFFSET,
    SLOT_BYTES,
    OffsetMap,
    OffsetMapFullError,
)

MIB = 1024 * 1024
KAFKA_KEYS_PER_MIB = 0.9 * MIB / KAFKA_SLOT_BYTES  # 39,321.6: 24 bytes per slot at load factor 0.9


def kafka_capacity(memory_bytes: int, load_factor: float = 0.9) -> int:
    return int((memory_bytes // KAFKA_SLOT_BYTES) * load_factor)


def map_of_slots(slots: int, load_factor: float = 0.9) -> OffsetMap:
    offset_map = OffsetMap(OffsetMap.memory_bytes_for_slots(slots), load_factor)
    assert offset_map.slots == slots
    return offset_map


def buffer_bytes(offset_map: OffsetMap) -> int:
    """What CPython allocated for every buffer the map holds, measured with sys.getsizeof (incl. bytearray NULs)."""
    total = 0
    for name in OffsetMap.__slots__:
        value = getattr(offset_map, name)
        if isinstance(value, bytearray):
            total += sys.getsizeof(value) - sys.getsizeof(bytearray())
        elif isinstance(value, array):
            total += sys.getsizeof(value) - sys.getsizeof(array(value.typecode))
        else:
            assert isinstance(value, int | float), (name, type(value))  # nothing else can hold memory
    return total


def test_S11_capacity_arithmetic_and_density_vs_kafka() -> None:
    offset_map = OffsetMap(128 * MIB, 0.9)
    assert SLOT_BYTES == 15 and FINGERPRINT_BITS == 88
    assert offset_map.slots == 8_668_228
    assert offset_map.capacity == 7_801_405
    assert offset_map.memory_bytes == 128 * MIB
    assert buffer_bytes(offset_map) == offset_map.allocated_bytes == 134_217_727 <= 128 * MIB
    offset_map.put(b"k", 0)
    latest = offset_map.latest_offset_bits()
    assert latest is not None and latest[1] - latest[0] == 8 * (128 * MIB // 32)  # the bitmap is inside the budget
    assert kafka_capacity(128 * MIB) == 5_033_164
    assert offset_map.capacity / kafka_capacity(128 * MIB) >= 1.55
    assert OffsetMap(MIB, 0.9).capacity == 60_948  # keys per MiB, what bench.cleaner_throughput prints


@pytest.mark.parametrize("memory_bytes", [MIB, 16 * MIB + 7, 128 * MIB, 2_147_483_647 // 64])
def test_everything_allocated_fits_memory_bytes_at_1_5x_kafka_density(memory_bytes: int) -> None:
    """Counted over all of the map's memory as traced by tracemalloc: buffers, bitmap, the object itself."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        offset_map = OffsetMap(memory_bytes, 0.9)
        traced = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    buffers = buffer_bytes(offset_map)
    assert buffers <= memory_bytes
    assert buffers <= traced <= memory_bytes + 512  # + the Python object headers, a few hundred bytes
    assert offset_map.capacity / (traced / MIB) >= 1.5 * KAFKA_KEYS_PER_MIB
    assert offset_map.capacity / (memory_bytes / MIB) >= 1.54 * KAFKA_KEYS_PER_MIB
    assert offset_map.capacity >= 1.5 * kafka_capacity(memory_bytes)


@pytest.mark.parametrize("slots", [2, 3, 4, 200, 1024, 1_000_003])
def test_memory_bytes_for_slots_is_the_smallest_memory_for_that_many_slots(slots: int) -> None:
    memory_bytes = OffsetMap.memory_bytes_for_slots(slots)
    assert OffsetMap(memory_bytes, 1.0).slots == slots
    assert OffsetMap(memory_bytes - 1, 1.0).slots == slots - 1 if slots > 2 else True
    assert buffer_bytes(OffsetMap(memory_bytes, 1.0)) <= memory_bytes


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
    offset_map = map_of_slots(2, 0.75)  # Kafka's testPartialSegmentClean map: 2 slots, 1 entry
    assert offset_map.capacity == 1
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
    offset_map = map_of_slots(4, 1.5)
    assert offset_map.capacity == 3
    for i in range(3):
        offset_map.put(b"k%d" % i, i)
    assert offset_map.get(b"absent") == -1  # terminates: one slot stays empty


def test_map_too_small_for_one_key_is_rejected() -> None:
    with pytest.raises(ValueError):
        OffsetMap(2 * SLOT_BYTES, 0.9)


def test_clear_forgets_keys_and_resets_counters() -> None:
    offset_map = map_of_slots(64)
    for i in range(50):
        offset_map.put(b"k%d" % i, 1000 + i)
    offset_map.clear()
    assert offset_map.size == 0 and offset_map.latest_offset == -1
    assert offset_map.lookups == 0 and offset_map.collisions == 0
    assert all(offset_map.get(b"k%d" % i) == -1 for i in range(50))
    assert not any(offset_map._table)
    offset_map.put(b"k1", 5)  # a new round may start below the previous base
    assert offset_map.get(b"k1") == 5


def test_offsets_are_relative_to_the_round_base_within_32_bits() -> None:
    offset_map = map_of_slots(64)
    base = 10**12
    offset_map.put(b"a", base)
    top = base + MAX_RELATIVE_OFFSET
    assert MAX_RELATIVE_OFFSET == 2**32 - 1
    assert offset_map.fits_offset(top)
    offset_map.put(b"b", top)
    assert offset_map.get(b"b") == top and offset_map.get(b"a") == base
    assert not offset_map.fits_offset(top + 1)
    assert not offset_map.fits_offset(base - 1)
    with pytest.raises(ValueError):
        offset_map.put(b"c", top + 1)
    assert offset_map.get(b"c") == -1


def test_put_latest_refuses_a_key_beyond_the_round_range_but_not_a_trailing_gap() -> None:
    offset_map = map_of_slots(64)
    with pytest.raises(ValueError):
        offset_map.put_latest({b"a": 0, b"b": 2**32}, 0, 2**32)
    assert offset_map.size == 0 and offset_map.get(b"a") == -1  # nothing was put
    offset_map.put_latest({b"a": 0, b"b": 7}, 0, 2**40)  # offsets past the last key are a gap
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.latest_offset) == (0, 7, 2**40)


def test_update_latest_offset() -> None:
    offset_map = map_of_slots(64)
    offset_map.put(b"a", 3)
    offset_map.update_latest_offset(9)
    assert offset_map.latest_offset == 9


def _home_slot(key: bytes, slots: int) -> int:
    home = struct.unpack_from("<QII", blake2b(key).digest())[2]
    return (home * slots) >> 32


def test_no_false_deletes_on_keys_sharing_their_home_slot() -> None:
    """200 real keys hashing to one home slot of a 1024-slot map, and keys probing through that run."""
    offset_map = map_of_slots(1024)
    by_home: dict[int, list[bytes]] = {}
    for i in range(200_000):
        key = b"near-%d" % i
        by_home.setdefault(_home_slot(key, 1024), []).append(key)
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
    assert offset_map.false_match_bound == (offset_map.lookups + offset_map.collisions) * 2.0**-88 < 1e-20


class _CraftedHash:
    """Stands in for blake2b with chosen digests: (fingerprint bits 0..87 as an int, home slot)."""

    slots = 16
    digests: dict[bytes, bytes] = {}

    @classmethod
    def craft(cls, key: bytes, fingerprint: int, home_slot: int, spare_bits: int = 0) -> None:
        home = -(-(home_slot << 32) // cls.slots)  # the smallest 32-bit home that lands on home_slot
        assert (home * cls.slots) >> 32 == home_slot
        low = (fingerprint >> 64) | spare_bits << 24
        cls.digests[key] = struct.pack("<QII", fingerprint & (2**64 - 1), low, home) + bytes(48)

    def __init__(self, key: bytes) -> None:
        self._digest = self.digests[key]

    def digest(self) -> bytes:
        return self._digest


@pytest.fixture
def crafted(monkeypatch: pytest.MonkeyPatch) -> type[_CraftedHash]:
    import minikafka.cleaner.offset_map as module

    _CraftedHash.digests = {}
    monkeypatch.setattr(module, "blake2b", _CraftedHash)
    return _CraftedHash


def test_every_one_of_the_88_fingerprint_bits_tells_keys_apart(crafted: type[_CraftedHash]) -> None:
    """Near collisions: same home slot, fingerprints one bit apart, for each bit; and the empty-slot marker."""
    fingerprint = 0x5A5A_1234_89AB_CDEF_0F_0F0F
    crafted.craft(b"stored", fingerprint, 3)
    for bit in range(FINGERPRINT_BITS):
        crafted.craft(b"near-%d" % bit, fingerprint ^ (1 << bit), 3)
    crafted.craft(b"zero-high", fingerprint & ~(2**64 - 1), 3)  # bits 0..63 all zero: must not read as empty
    offset_map = map_of_slots(crafted.slots)
    offset_map.put(b"stored", 100)
    for bit in range(FINGERPRINT_BITS):
        assert offset_map.get(b"near-%d" % bit) == -1, bit
    offset_map.put(b"zero-high", 101)
    offset_map.put(b"near-87", 102)
    offset_map.put(b"near-0", 103)
    assert [offset_map.get(k) for k in (b"stored", b"zero-high", b"near-87", b"near-0")] == [100, 101, 102, 103]
    assert offset_map.size == 4 and offset_map.collisions > 0


def test_keys_equal_on_all_88_fingerprint_bits_are_one_key(crafted: type[_CraftedHash]) -> None:
    """The bound's premise: only bits 0..87 and the home slot are compared (bits 88..95 are unused)."""
    crafted.craft(b"a", 12345, 5)
    crafted.craft(b"b", 12345, 5, spare_bits=0xFF)
    offset_map = map_of_slots(crafted.slots)
    offset_map.put(b"a", 1)
    assert offset_map.get(b"b") == 1


def test_writes_keep_the_neighbouring_slot_and_the_last_slot_wraps(crafted: type[_CraftedHash]) -> None:
    """A slot is read and written as 16 bytes: the 16th is the next slot's first byte (or the padding byte)."""
    last = crafted.slots - 1
    crafted.craft(b"s5", 0xFF, 5)  # first byte 0xFF: clobbering it would lose the key
    crafted.craft(b"s4", 0xEE, 4)
    crafted.craft(b"last-a", 0xDD, last)
    crafted.craft(b"last-b", 0xCC, last)  # wraps around to slot 0
    offset_map = map_of_slots(crafted.slots)
    offset_map.put(b"s5", 50)
    offset_map.put(b"s4", 51)
    offset_map.put(b"s4", 52)
    offset_map.put(b"last-a", 60)
    offset_map.put(b"last-b", 61)
    offset_map.put(b"last-a", 62)
    assert [offset_map.get(k) for k in (b"s5", b"s4", b"last-a", b"last-b")] == [50, 52, 62, 61]
    assert offset_map._table[-1] == 0  # the padding byte stays 0
    assert offset_map._table[0] == 0xCC  # last-b sits in slot 0


def test_many_keys_round_trip_at_full_load() -> None:
    offset_map = map_of_slots(20_000)
    keys = [b"key-%d" % i for i in range(offset_map.capacity)]
    for offset, key in enumerate(keys):
        offset_map.put(key, offset * 2)
    assert offset_map.is_full
    assert offset_map.utilization == pytest.approx(0.9, abs=1e-4)
    for offset, key in enumerate(keys):
        assert offset_map.get(key) == offset * 2
    assert offset_map.get_many([*keys[:1000], b"missing"]) == [2 * i for i in range(1000)] + [-1]
    with pytest.raises(OffsetMapFullError):
        offset_map.put(b"one-too-many", 10**6)


def test_put_keys_fast_path_matches_put() -> None:
    offset_map = map_of_slots(256)
    pairs = [(10, b"a"), (11, None), (12, b"b"), (13, b"a"), (14, b"")]
    assert offset_map.put_keys(iter(pairs), min_offset=11) == 5
    assert offset_map.lookups == 3
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"")) == (13, 12, 14)
    assert offset_map.size == 3 and offset_map.latest_offset == 14
    reference = map_of_slots(256)
    for offset, key in pairs[2:]:
        assert key is not None
        reference.put(key, offset)
    assert reference.size == offset_map.size and reference.lookups == 3
    assert offset_map.put_keys(iter([(9, b"c")]), min_offset=11) == 1
    assert offset_map.get(b"c") == -1


def test_put_latest_leaves_the_same_table_and_bitmap_as_putting_every_record() -> None:
    pairs = [(1_000 + i, b"k%d" % (i * 7 % 50)) for i in range(400)]
    one_by_one = map_of_slots(128)
    for offset, key in pairs:
        one_by_one.put(key, offset)
    batched = map_of_slots(128)
    batched.put_latest(dict((key, offset) for offset, key in pairs), 1_000, 1_399)
    assert batched._table == one_by_one._table
    assert batched.latest_offset_bits() == one_by_one.latest_offset_bits()
    assert (batched.size, batched.latest_offset) == (one_by_one.size, one_by_one.latest_offset) == (50, 1_399)
