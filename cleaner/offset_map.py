"""The cleaner's key -> latest-offset map: fixed memory, 16 bytes per slot (Kafka: 24).

Layout
------
Open addressing with linear probing over one preallocated array of 2 x `slots` uint64 words; slot i is

    word 2i      uint64   bits  0..63 of the key's hash                      (0 marks an empty slot)
    word 2i + 1  uint64   (offset - base_offset) << 32 | bits 64..95 of the hash  (base = first offset put
                          after clear(); 32-bit relative offset)

= **16 bytes per slot**. The home slot is derived from hash bits 96..127 (`(h * slots) >> 32`), which are
disjoint from (independent of) the 96 stored fingerprint bits. Nothing else is allocated after construction.

Density (spec §2.4: Kafka's SkimpyOffsetMap stores a 16-byte MD5 + 8-byte offset = 24 bytes per slot):

    slots    = floor(memory_bytes / 16)           128 MiB -> 8,388,608 slots   (Kafka: 5,592,405)
    capacity = floor(slots * load_factor)         0.9     -> 7,549,747 keys    (Kafka: 5,033,164)
    keys per MiB at 0.9 = 1,048,576 / 16 * 0.9 = 58,982   (Kafka: 39,321)      -> 1.5x Kafka

Offsets are stored relative to the round's first mapped offset in 32 bits, so one round can map at most
2^32 consecutive offsets; `fits_offset()` tells the cleaner when to end the round early, exactly as when
the map is full (the round ends at `latest_offset + 1` and the next round continues). In practice a round
covering more than 4.29 billion offsets with < 7.5M distinct keys per 128 MiB is not a limit that bites.

Latest-offset bitmap
--------------------
Besides the table, one bytearray of memory_bytes / 32 (4 MiB for 128 MiB, allocated once) holds one bit per
offset from the round's base: set iff that offset is the latest put for its key (a put sets its bit and
clears the bit of the offset it supersedes). The recopy pass reads it (`latest_offset_bits`) instead of
hashing every record of the mapped range a second time; offsets past its reach (32 Mi from the base) and the
clean section are answered by `get`/`get_many`. The bitmap is exact (no fingerprints involved). It is
outside the density figures above: counting it, 128 MiB hold 7,549,747 keys in 132 MiB, 57,195 keys per MiB
= 1.45x Kafka; the table alone stays within `memory_bytes` at 1.5x.

Collision bound
---------------
A lookup (put or get) compares the 96-bit fingerprint of its key with the fingerprint of each occupied slot
on its probe path. For a distinct stored key the two fingerprints are equal with probability 2^-96, and
*which* slots are on the path depends only on bits 96..127, which are independent of the fingerprints
(the hash output is modelled as uniform). By the union bound over every comparison made in a round:

    P(any false match in a round) <= total_probes * 2^-96 = (lookups + collisions) * 1.26e-29

`collisions` counts the probes past the first slot and is reported by the map, so `false_match_bound` is
the exact bound for the work actually done. At load factor 0.9 linear probing averages ~5.5 probes for a
hit and ~50 for a miss (Knuth), so even 10^12 lookups, all misses, give < 50 * 10^12 * 1.26e-29 = 6.3e-16
< 1e-15. The cruder bound `n_lookups * n_keys / 2^96` (compare with every stored key) gives 9.5e-15 for
10^8 lookups at 7.5M keys. Kafka's MD5 map has the same form with 128 bits but MD5 is not
collision-resistant (see below).

Hash
----
`hashlib.blake2b(key, digest_size=16)`: in CPython it is the fastest strong hash in the stdlib for short
keys (measured ~0.5 us per 10-byte key, faster than md5 here), and unlike MD5 it is collision-resistant,
so a producer cannot craft two keys with equal fingerprints to make the cleaner delete a live record
(MD5 collisions are cheap to generate; the 2^-96 bound above only holds for keys not chosen adversarially
against the hash). Python's built-in `hash()` has only 64 bits and a per-process seed.

Speed (`python -m cleaner.offset_map`: 1M distinct 10-byte keys into a 64 MiB map, CPython 3.11 on a shared
2-CPU box): 0.45-0.65M puts/s and 0.45-0.65M gets/s when the box is quiet, ~0.25M/s at load average 5; a
bare blake2b + unpack loop alone runs at ~1.1M/s, so the hash is about half the cost. `put_keys` (one call
per batch, used by the map pass when the whole batch fits) saves the per-call overhead, `put_latest` takes a
run of batches already deduplicated by key (one hash per distinct key), `get_many` a batch's lookups. One
array probe per lookup touches one cache line. The probe loop is written out in each of `put`, `put_keys`,
`get` and `get_many` on purpose: a shared helper would cost a Python call per key on the cleaner's hot path.
"""

from __future__ import annotations

import ctypes
import struct
import time
from array import array
from collections.abc import Iterable
from hashlib import blake2b

SLOT_BYTES = 16
KAFKA_SLOT_BYTES = 24  # SkimpyOffsetMap: 16-byte MD5 digest + 8-byte offset
FINGERPRINT_BITS = 96
_MAX_RELATIVE_OFFSET = 0xFFFF_FFFF
_LOW_MASK = 0xFFFF_FFFF
_unpack_digest = struct.Struct("<QII").unpack
_LATEST_BITS_FRACTION = 32

if array("Q").itemsize != 8:  # pragma: no cover - exotic platforms
    raise ImportError("offset_map needs 8-byte 'Q' array items")


class OffsetMapFullError(RuntimeError):
    """A put was attempted on a full map (the caller must check `is_full` / `fits_offset` first)."""


class OffsetMap:
    """Fixed-memory map from a key's hash to the latest offset at which the key was seen in this round.

    Owns one preallocated array (16 bytes per slot) for its whole life. Not thread-safe: one map per
    cleaner thread, used by that thread only.
    """

    __slots__ = (
        "_base_offset",
        "_latest_bits",
        "_latest_bits_limit",
        "_latest_bits_used",
        "_table",
        "_table_length",
        "capacity",
        "collisions",
        "latest_offset",
        "load_factor",
        "lookups",
        "size",
        "slots",
    )

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        slots = memory_bytes // SLOT_BYTES
        if slots * load_factor <= 1:
            raise ValueError(
                f"offset map of {memory_bytes} bytes with load factor {load_factor} cannot hold a single key"
            )
        self.slots = slots
        self.load_factor = load_factor
        # Kafka lets a load factor >= 1 fill every slot and then fail; always keep one slot empty so a
        # probe for an absent key terminates.
        self.capacity = min(int(slots * load_factor), slots - 1)
        # Slot i = table[2i] (fingerprint bits 0..63, 0 = empty) and table[2i + 1] (relative offset << 32 |
        # fingerprint bits 64..95): one array, so a probe touches one cache line.
        self._table = array("Q", bytes(8)) * (2 * slots)
        self._table_length = 2 * slots
        self._base_offset = -1
        self.size = 0
        self.latest_offset = -1
        self.lookups = 0
        self.collisions = 0
        # Bit r set <=> offset base + r is the latest offset put for its key (see latest_offset_bits), for
        # r < _latest_bits_limit; _latest_bits_used: bytes touched since clear().
        self._latest_bits = bytearray(max(memory_bytes // _LATEST_BITS_FRACTION, 1))
        self._latest_bits_limit = 8 * len(self._latest_bits)
        self._latest_bits_used = 0

    @property
    def memory_bytes(self) -> int:
        return self.slots * SLOT_BYTES

    @property
    def is_full(self) -> bool:
        """True once `capacity` distinct keys are stored: the first pass must stop before the next put."""
        return self.size >= self.capacity

    @property
    def utilization(self) -> float:
        """size / slots (so at most the load factor), as Kafka's `max-buffer-utilization-percent` uses."""
        return self.size / self.slots

    @property
    def false_match_bound(self) -> float:
        """Upper bound on P(any lookup since clear() matched a different key): probes * 2^-96."""
        return (self.lookups + self.collisions) * 2.0**-FINGERPRINT_BITS

    def fits_offset(self, offset: int) -> bool:
        """Whether `offset` can be stored relative to this round's base offset (32 bits)."""
        return self._base_offset < 0 or 0 <= offset - self._base_offset <= _MAX_RELATIVE_OFFSET

    def clear(self) -> None:
        """Forget every key (start of a round); keeps the memory."""
        address, length = self._table.buffer_info()
        ctypes.memset(address, 0, length * 8)
        bits = self._latest_bits
        used = self._latest_bits_used
        if used:
            ctypes.memset((ctypes.c_char * len(bits)).from_buffer(bits), 0, used)
        self._latest_bits_used = 0
        self._base_offset = -1
        self.size = 0
        self.latest_offset = -1
        self.lookups = 0
        self.collisions = 0

    def update_latest_offset(self, offset: int) -> None:
        """Advance the mapped range past offsets that need no entry (batch tails, gaps, segment ends)."""
        self.latest_offset = offset

    def put(self, key: bytes, offset: int) -> None:
        """Record `offset` as the latest offset of `key` and set `latest_offset` to it.

        Raises OffsetMapFullError for a new key when the map is full, ValueError when the offset cannot be
        stored relative to the round's base (see `fits_offset`).
        """
        base = self._base_offset
        if base < 0:
            base = self._base_offset = offset
        relative = offset - base
        if relative < 0 or relative > _MAX_RELATIVE_OFFSET:
            raise ValueError(f"offset {offset} is out of this round's range from {base}")
        high, low, home = _unpack_digest(blake2b(key, digest_size=16).digest())
        high = high or 1
        slots = self.slots
        index = ((home * slots) >> 32) << 1
        table = self._table
        self.lookups += 1
        stored = table[index]
        if stored != 0 and (stored != high or (table[index + 1] & _LOW_MASK) != low):
            probes = 0
            while stored != 0 and (stored != high or (table[index + 1] & _LOW_MASK) != low):
                probes += 1
                index += 2
                if index == self._table_length:
                    index = 0
                stored = table[index]
            self.collisions += probes
        bits = self._latest_bits
        if stored == 0:
            if self.size >= self.capacity:
                raise OffsetMapFullError(f"offset map is full ({self.size} of {slots} slots)")
            table[index] = high
            self.size += 1
        else:
            previous = table[index + 1] >> 32
            if previous < self._latest_bits_limit:
                bits[previous >> 3] &= ~(1 << (previous & 7))
        table[index + 1] = (relative << 32) | low
        self.latest_offset = offset
        if relative < self._latest_bits_limit:
            bits[relative >> 3] |= 1 << (relative & 7)
            self._latest_bits_used = max(self._latest_bits_used, (relative >> 3) + 1)

    def put_keys(self, keys: Iterable[tuple[int, bytes | None]], min_offset: int) -> int:
        """Put every keyed (offset, key) with offset >= min_offset, in order; return how many pairs were read.

        The map pass's fast path for one batch: the caller has checked that the whole batch fits (room for
        every record as a new key, last offset within `fits_offset`), so no per-record fullness check runs.
        """
        table = self._table
        slots = self.slots
        table_length = self._table_length
        base = self._base_offset
        digest = blake2b
        unpack = _unpack_digest
        low_mask = _LOW_MASK
        read = 0
        skipped = 0
        collisions = 0
        added = 0
        latest = self.latest_offset
        bits = self._latest_bits
        bits_limit = self._latest_bits_limit
        for offset, key in keys:
            read += 1
            if key is None or offset < min_offset:
                skipped += 1
                continue
            if base < 0:
                base = self._base_offset = offset
            high, low, home = unpack(digest(key, digest_size=16).digest())
            high = high or 1
            index = ((home * slots) >> 32) << 1
            relative = offset - base
            stored = table[index]
            while stored:
                if stored == high:
                    word = table[index + 1]
                    if (word & low_mask) == low:
                        word >>= 32
                        if word < bits_limit:
                            bits[word >> 3] &= ~(1 << (word & 7))
                        break
                collisions += 1
                index += 2
                if index == table_length:
                    index = 0
                stored = table[index]
            else:
                table[index] = high
                added += 1
            table[index + 1] = (relative << 32) | low
            if relative < bits_limit:
                bits[relative >> 3] |= 1 << (relative & 7)
            latest = offset
        self.size += added
        self.lookups += read - skipped
        self.collisions += collisions
        self.latest_offset = latest
        if read > skipped:
            self._latest_bits_used = max(self._latest_bits_used, (min(latest - base, bits_limit - 1) >> 3) + 1)
        return read

    def put_latest(self, latest_by_key: dict[bytes, int], first_offset: int, last_offset: int) -> None:
        """Put each key's latest offset from offsets `first_offset..last_offset`, already deduplicated by the
        caller: the same final state as putting every (offset, key) of that range in order, with one hash per
        distinct key. The caller has checked that every key fits as a new one and `fits_offset(last_offset)`.
        """
        if not latest_by_key:
            return
        if self._base_offset < 0:
            self._base_offset = first_offset
        self.put_keys(zip(latest_by_key.values(), latest_by_key.keys()), first_offset)
        self.latest_offset = last_offset
        reach = min(last_offset - self._base_offset, self._latest_bits_limit - 1)
        self._latest_bits_used = max(self._latest_bits_used, (reach >> 3) + 1)

    def latest_offset_bits(self) -> tuple[int, int, bytearray] | None:
        """(base offset, end offset, bitmap): for base <= o < end, bit o - base (byte r >> 3, bit r & 7) is set
        iff o is the latest offset put for its key since clear() -- the recopy pass's exact answer for mapped
        offsets without hashing. None while nothing was put.

        The bitmap is memory_bytes / 32 bytes (32 Mi offsets for a 128 MiB map), allocated once; offsets from
        `end` on are answered by `get` only. Do not modify it. Offsets never put (unkeyed records, skipped
        batches) have no bit set.
        """
        if self._base_offset < 0:
            return None
        return self._base_offset, self._base_offset + self._latest_bits_limit, self._latest_bits

    def get(self, key: bytes) -> int:
        """The latest offset recorded for `key`, or -1 if the key is not in the map."""
        high, low, home = _unpack_digest(blake2b(key, digest_size=16).digest())
        high = high or 1
        index = ((home * self.slots) >> 32) << 1
        table = self._table
        self.lookups += 1
        stored = table[index]
        if stored == high:
            word = table[index + 1]
            if (word & _LOW_MASK) == low:
                return self._base_offset + (word >> 32)
        # The map always keeps an empty slot (capacity < slots), so this loop ends.
        probes = 0
        while stored != 0:
            probes += 1
            index += 2
            if index == self._table_length:
                index = 0
            stored = table[index]
            if stored == high:
                word = table[index + 1]
                if (word & _LOW_MASK) == low:
                    self.collisions += probes
                    return self._base_offset + (word >> 32)
        self.collisions += probes
        return -1

    def get_many(self, keys: Iterable[bytes]) -> list[int]:
        """`[get(key) for key in keys]` in one call (the recopy pass looks up a batch's keys at once)."""
        table = self._table
        slots = self.slots
        table_length = self._table_length
        base = self._base_offset
        digest = blake2b
        unpack = _unpack_digest
        found: list[int] = []
        append = found.append
        lookups = 0
        collisions = 0
        for key in keys:
            lookups += 1
            high, low, home = unpack(digest(key, digest_size=16).digest())
            high = high or 1
            index = ((home * slots) >> 32) << 1
            stored = table[index]
            while stored != 0:
                if stored == high:
                    word = table[index + 1]
                    if (word & _LOW_MASK) == low:
                        append(base + (word >> 32))
                        break
                collisions += 1
                index += 2
                if index == table_length:
                    index = 0
                stored = table[index]
            else:
                append(-1)
        self.lookups += lookups
        self.collisions += collisions
        return found

    def __repr__(self) -> str:
        return (
            f"OffsetMap(slots={self.slots}, capacity={self.capacity}, size={self.size}, "
            f"latest_offset={self.latest_offset})"
        )


def bench_offset_map(keys: int = 1_000_000, memory_bytes: int = 64 * 1024 * 1024) -> tuple[float, float]:
    """Measure (puts/s, gets/s) for `keys` distinct keys (the numbers in the module docstring)."""
    offset_map = OffsetMap(memory_bytes, 0.9)
    key_list = [b"key-%06d" % i for i in range(keys)]
    put, get = offset_map.put, offset_map.get
    start = time.perf_counter()
    for offset, key in enumerate(key_list):
        put(key, offset)
    put_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for key in key_list:
        get(key)
    get_seconds = time.perf_counter() - start
    return keys / put_seconds, keys / get_seconds


if __name__ == "__main__":  # pragma: no cover
    puts_per_second, gets_per_second = bench_offset_map()
    print(f"{puts_per_second:,.0f} puts/s, {gets_per_second:,.0f} gets/s")
