"""The cleaner's key -> latest-offset map: fixed memory, 15 bytes per slot (Kafka: 24), bitmap included.

Memory
------
Everything the map allocates comes out of `memory_bytes` (`log.cleaner.dedupe.buffer.size` split across
`log.cleaner.threads`), once, in the constructor:

    latest-offset bitmap  bytearray(B)               B = memory_bytes / 32 (at most 2^32 bits: a round's range)
    slot table            bytearray(15 * slots + 1)  + 1: a slot is read as 16 bytes (see Layout)
    CPython's NUL byte    + 1 per bytearray          (`allocated_bytes` counts what CPython allocates)

    slots    = floor((memory_bytes - B - 3) / 15)   so  B + 1 + 15 * slots + 1 + 1 <= memory_bytes
    capacity = floor(slots * load_factor)          (at most slots - 1: a probe for an absent key must end)

Density (spec §2.4: Kafka's SkimpyOffsetMap stores a 16-byte MD5 + 8-byte offset = 24 bytes per slot):

    128 MiB: B = 4,194,304; slots = (134,217,728 - 4,194,304 - 3) / 15 = 8,668,228   (Kafka: 5,592,405)
             allocated = 4,194,305 + 130,023,422 = 134,217,727 bytes <= 134,217,728
             capacity at 0.9 = 7,801,405 keys                                        (Kafka: 5,033,164)
    keys per MiB at 0.9 ~ 2^20 * 31/32 / 15 * 0.9 = 60,948   (Kafka: 2^20 / 24 * 0.9 = 39,321.6)  -> 1.55x
    (1 MiB: 67,720 slots, capacity 60,948: the figure `bench.cleaner_throughput` prints from a real map)

Layout
------
Open addressing with linear probing over the slot table; slot i is the 15 bytes at 15 * i:

    bytes 0..7    uint64  hash bits 0..63                       (0 marks an empty slot; a hash of 0 stores 1)
    bytes 8..14   uint56  relative offset << 24 | hash bits 64..87
                          relative offset = offset - base_offset, 32 bits (base = first offset put after clear())

= 88 fingerprint bits + 32 offset bits. A probe reads 16 bytes with one precompiled `Struct("<QQ").unpack_from`;
the second word's top byte is the next slot's first byte (for the last slot, the padding byte), so writes keep
that byte as read. The home slot is `(h * slots) >> 32` of hash bits 96..127, disjoint from (independent of)
the stored fingerprint bits; bits 88..95 are unused. The hash is the first 16 bytes of `blake2b(key)`: its
default 64-byte digest, because passing `digest_size=16` costs ~0.1 us per key in argument parsing.

Offsets are stored relative to the round's first mapped offset in 32 bits, so one round maps at most 2^32
consecutive offsets (as before this layout; Kafka's sparse-offset scenario S42 spans 2^31 + 5 in one round);
`fits_offset()` tells the cleaner when to end the round early, exactly as when the map is full (the round ends
at `latest_offset + 1` and the next round continues).

Latest-offset bitmap
--------------------
Bit r is set iff offset base + r is the latest offset put for its key (a put sets its bit and clears the bit
of the offset it supersedes). The recopy pass reads it (`latest_offset_bits`) instead of hashing every record
of the mapped range a second time; offsets past its reach (8 * B: 32 Mi offsets for a 128 MiB map) and the
clean section are answered by `get`/`get_many`. It is exact (no fingerprints involved).

Collision bound
---------------
A lookup (put or get) compares the 88-bit fingerprint of its key with that of each occupied slot on its probe
path. For a distinct stored key the two are equal with probability 2^-88 = 3.2e-27, and *which* slots are on
the path depends only on bits 96..127, independent of the fingerprints (hash output modelled as uniform). By
the union bound over every comparison made in a round:

    P(any false match in a round) <= comparisons * 2^-88      (`false_match_bound`: the bound for the work done)

A false match is what could delete a live record. Comparisons in a round at full load (load factor 0.9;
Knuth's linear-probing averages: <= 5.5 per put or hit, averaged over a fill up to 0.9, and 50.5 per miss):
  - map pass: at most one put per offset of the round, <= 2^32 puts (put_latest: one per distinct key);
  - recopy pass: offsets within the bitmap's reach need no lookup; dirty offsets past it, <= 2^32 hits; each
    of the clean section's N_clean records is looked up by key, at worst a miss.

    E[false matches per round] <= 2^-88 * (2 * 2^32 * 5.5 + 50.5 * N_clean) = 1.5e-16 + 1.6e-25 * N_clean

which is < 1e-15 for a clean section of fewer than 5.2e9 records (compaction keeps about one record per key
there: 5.2e9 distinct keys in one partition, ~520 GB at 100 bytes per record); even a round of 2^32 offsets
over a 10^9-record clean section stays at 3.2e-16. The former 16-byte slot had 96 bits with 32-bit offsets
(256x fewer false matches) but did not fit its memory once the bitmap was counted; 28-bit offsets would buy
92 bits at the price of more rounds on sparse or update-heavy logs, and a round could no longer span S42's gap.

Hash
----
blake2b is the fastest strong hash in CPython's stdlib for short keys (~0.5 us per 10-byte key) and, unlike
MD5, collision-resistant: a producer cannot cheaply craft two keys that make the cleaner delete a live record
(MD5 collisions take seconds; here two keys must agree on 88 fingerprint bits and share a probe run, ~23 home
bits for a 128 MiB map: a birthday search of ~2^55 blake2b evaluations). The 2^-88 bound above is for keys
not chosen against the hash. Python's `hash()` has 64 bits only.

Speed (`python -m minikafka.cleaner.offset_map`: 1M distinct 10-byte keys into a 64 MiB map, CPython 3.11, shared
2-CPU box at load average < 1, best of 8 runs alternating with the former 16-byte layout): 0.57M puts/s and 0.89M
gets/s (16-byte layout: 0.54M and 0.85M; dropping `digest_size` pays for the unaligned slot reads). Instructions per
key (cachegrind, load-independent) against the 16-byte layout: put +2%, put_keys +3%, put_latest -1%, get_many -2%.
`put_keys` (one call per batch, the map pass's path when the whole batch fits) saves the per-call overhead,
`put_latest` takes a run of batches already deduplicated by key (one hash per distinct key), `get_many` a batch's
lookups. The probe loop is written out in each of `put`, `put_keys`, `put_latest`, `get` and `get_many` on purpose:
a shared helper would cost a Python call per key on the cleaner's hot path.
"""

from __future__ import annotations

import ctypes
import struct
import time
from collections.abc import Iterable
from hashlib import blake2b

SLOT_BYTES = 15
KAFKA_SLOT_BYTES = 24  # SkimpyOffsetMap: 16-byte MD5 digest + 8-byte offset
FINGERPRINT_BITS = 88
RELATIVE_OFFSET_BITS = 32
#: the largest `offset - base_offset` one round can store (`fits_offset`)
MAX_RELATIVE_OFFSET = (1 << RELATIVE_OFFSET_BITS) - 1
_LOW_MASK = (1 << 24) - 1  # hash bits 64..87, the low 24 bits of a slot's second word
_NEXT_SLOT_BYTE = 0xFF << 56  # the top byte of a slot's second word: the next slot's first byte
_LATEST_BITS_FRACTION = 32
_MAX_LATEST_BITS_BYTES = (MAX_RELATIVE_OFFSET + 1) // 8
_FIXED_BYTES = 3  # the table's padding byte + CPython's trailing NUL byte of each of the two bytearrays
_digest_parts = struct.Struct("<QII").unpack_from  # hash bits 0..63, 64..95, 96..127 of the digest
_slot_struct = struct.Struct("<QQ")
_read_slot = _slot_struct.unpack_from
_write_slot = _slot_struct.pack_into
_write_entry = struct.Struct("<Q").pack_into  # at slot + 8: the second word (keeps the next slot's first byte)


def _latest_bits_bytes(memory_bytes: int) -> int:
    return max(min(memory_bytes // _LATEST_BITS_FRACTION, _MAX_LATEST_BITS_BYTES), 1)


def _slots_for(memory_bytes: int) -> int:
    return max((memory_bytes - _latest_bits_bytes(memory_bytes) - _FIXED_BYTES) // SLOT_BYTES, 0)


class OffsetMapFullError(RuntimeError):
    """A put was attempted on a full map (the caller must check `is_full` / `fits_offset` first)."""


class OffsetMap:
    """Fixed-memory map from a key's hash to the latest offset at which the key was seen in this round.

    Owns two bytearrays (the slot table and the latest-offset bitmap) that together fit `memory_bytes`,
    allocated once for its whole life. Not thread-safe: one map per cleaner thread, used by that thread only.
    """

    __slots__ = (
        "_base_offset",
        "_latest_bits",
        "_latest_bits_limit",
        "_latest_bits_used",
        "_table",
        "_table_bytes",
        "capacity",
        "collisions",
        "latest_offset",
        "load_factor",
        "lookups",
        "memory_bytes",
        "size",
        "slots",
    )

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        slots = _slots_for(memory_bytes)
        if slots * load_factor <= 1:
            raise ValueError(
                f"offset map of {memory_bytes} bytes with load factor {load_factor} cannot hold a single key"
            )
        self.memory_bytes = memory_bytes
        self.slots = slots
        self.load_factor = load_factor
        # Kafka lets a load factor >= 1 fill every slot and then fail; always keep one slot empty so a
        # probe for an absent key terminates.
        self.capacity = min(int(slots * load_factor), slots - 1)
        self._table_bytes = slots * SLOT_BYTES
        self._table = bytearray(self._table_bytes + 1)
        self._base_offset = -1
        self.size = 0
        self.latest_offset = -1
        self.lookups = 0
        self.collisions = 0
        # Bit r set <=> offset base + r is the latest offset put for its key (see latest_offset_bits), for
        # r < _latest_bits_limit; _latest_bits_used: bytes touched since clear().
        self._latest_bits = bytearray(_latest_bits_bytes(memory_bytes))
        self._latest_bits_limit = 8 * len(self._latest_bits)
        self._latest_bits_used = 0

    @staticmethod
    def memory_bytes_for_slots(slots: int) -> int:
        """The smallest `memory_bytes` that gives a map of `slots` slots (tests port Kafka's slot counts)."""
        low, high = 0, 16 * slots + 64  # 16 * slots + 64 leaves >= 15 * slots for the table
        while low < high:
            middle = (low + high) // 2
            if _slots_for(middle) >= slots:
                high = middle
            else:
                low = middle + 1
        return low

    @property
    def allocated_bytes(self) -> int:
        """Bytes CPython allocated for the map's buffers (each bytearray holds one more, a NUL): <= memory_bytes."""
        return len(self._table) + 1 + len(self._latest_bits) + 1

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
        """Upper bound on P(any lookup since clear() matched a different key): probes * 2^-88."""
        return (self.lookups + self.collisions) * 2.0**-FINGERPRINT_BITS

    def fits_offset(self, offset: int) -> bool:
        """Whether `offset` can be stored relative to this round's base offset (32 bits)."""
        return self._base_offset < 0 or 0 <= offset - self._base_offset <= MAX_RELATIVE_OFFSET

    def clear(self) -> None:
        """Forget every key (start of a round); keeps the memory."""
        table = self._table
        ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(table)), 0, len(table))
        bits = self._latest_bits
        used = self._latest_bits_used
        if used:
            ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(bits)), 0, used)
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
        if relative < 0 or relative > MAX_RELATIVE_OFFSET:
            raise ValueError(f"offset {offset} is out of this round's range from {base}")
        high, low, home = _digest_parts(blake2b(key).digest())
        high = high or 1
        low &= _LOW_MASK
        table = self._table
        position = ((home * self.slots) >> 32) * SLOT_BYTES
        self.lookups += 1
        stored, entry = _read_slot(table, position)
        if stored and (stored != high or (entry & _LOW_MASK) != low):
            probes = 0
            while stored and (stored != high or (entry & _LOW_MASK) != low):
                probes += 1
                position += SLOT_BYTES
                if position == self._table_bytes:
                    position = 0
                stored, entry = _read_slot(table, position)
            self.collisions += probes
        bits = self._latest_bits
        if stored:
            previous = (entry >> 24) & MAX_RELATIVE_OFFSET
            if previous < self._latest_bits_limit:
                bits[previous >> 3] &= ~(1 << (previous & 7))
            _write_entry(table, position + 8, (entry & _NEXT_SLOT_BYTE) | (relative << 24) | low)
        else:
            if self.size >= self.capacity:
                raise OffsetMapFullError(f"offset map is full ({self.size} of {self.slots} slots)")
            # An empty slot's entry bytes are 0: `entry` is just the next slot's first byte, kept as is.
            _write_slot(table, position, high, entry | (relative << 24) | low)
            self.size += 1
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
        table_bytes = self._table_bytes
        base = self._base_offset
        digest = blake2b
        parts = _digest_parts
        read_slot, write_slot, write_entry = _read_slot, _write_slot, _write_entry
        next_slot_byte = _NEXT_SLOT_BYTE
        low_mask = _LOW_MASK
        max_relative = MAX_RELATIVE_OFFSET
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
            high, low, home = parts(digest(key).digest())
            high = high or 1
            low &= low_mask
            position = ((home * slots) >> 32) * 15
            relative = offset - base
            stored, entry = read_slot(table, position)
            while stored:
                if stored == high and (entry & low_mask) == low:
                    previous = (entry >> 24) & max_relative
                    if previous < bits_limit:
                        bits[previous >> 3] &= ~(1 << (previous & 7))
                    write_entry(table, position + 8, (entry & next_slot_byte) | (relative << 24) | low)
                    break
                collisions += 1
                position += 15
                if position == table_bytes:
                    position = 0
                stored, entry = read_slot(table, position)
            else:
                write_slot(table, position, high, entry | (relative << 24) | low)
                added += 1
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
        distinct key. The caller has checked that every key fits as a new one and that each key's offset is
        within MAX_RELATIVE_OFFSET of the round's base (else ValueError, nothing put); `last_offset` only
        becomes `latest_offset` (the offsets after the last key's may be a gap of any length).
        """
        if not latest_by_key:
            return
        base = self._base_offset
        if base < 0:
            base = first_offset
        if first_offset < base or (last_offset - base > MAX_RELATIVE_OFFSET
                                   and max(latest_by_key.values()) - base > MAX_RELATIVE_OFFSET):
            raise ValueError(f"offsets {first_offset}..{last_offset} are out of this round's range from {base}")
        self._base_offset = base
        table = self._table
        slots = self.slots
        table_bytes = self._table_bytes
        digest = blake2b
        parts = _digest_parts
        read_slot, write_slot, write_entry = _read_slot, _write_slot, _write_entry
        next_slot_byte = _NEXT_SLOT_BYTE
        low_mask = _LOW_MASK
        max_relative = MAX_RELATIVE_OFFSET
        collisions = 0
        added = 0
        bits = self._latest_bits
        bits_limit = self._latest_bits_limit
        for key, offset in latest_by_key.items():
            high, low, home = parts(digest(key).digest())
            high = high or 1
            low &= low_mask
            position = ((home * slots) >> 32) * 15
            relative = offset - base
            stored, entry = read_slot(table, position)
            while stored:
                if stored == high and (entry & low_mask) == low:
                    previous = (entry >> 24) & max_relative
                    if previous < bits_limit:
                        bits[previous >> 3] &= ~(1 << (previous & 7))
                    write_entry(table, position + 8, (entry & next_slot_byte) | (relative << 24) | low)
                    break
                collisions += 1
                position += 15
                if position == table_bytes:
                    position = 0
                stored, entry = read_slot(table, position)
            else:
                write_slot(table, position, high, entry | (relative << 24) | low)
                added += 1
            if relative < bits_limit:
                bits[relative >> 3] |= 1 << (relative & 7)
        self.size += added
        self.lookups += len(latest_by_key)
        self.collisions += collisions
        self.latest_offset = last_offset
        reach = min(last_offset - base, bits_limit - 1)
        self._latest_bits_used = max(self._latest_bits_used, (reach >> 3) + 1)

    def latest_offset_bits(self) -> tuple[int, int, bytearray] | None:
        """(base offset, end offset, bitmap): for base <= o < end, bit o - base (byte r >> 3, bit r & 7) is set
        iff o is the latest offset put for its key since clear() -- the recopy pass's exact answer for mapped
        offsets without hashing. None while nothing was put.

        The bitmap is memory_bytes / 32 bytes (32 Mi offsets for a 128 MiB map), allocated once within
        `memory_bytes`; offsets from `end` on are answered by `get` only. Do not modify it. Offsets never put
        (unkeyed records, skipped batches) have no bit set.
        """
        if self._base_offset < 0:
            return None
        return self._base_offset, self._base_offset + self._latest_bits_limit, self._latest_bits

    def get(self, key: bytes) -> int:
        """The latest offset recorded for `key`, or -1 if the key is not in the map."""
        high, low, home = _digest_parts(blake2b(key).digest())
        high = high or 1
        low &= _LOW_MASK
        position = ((home * self.slots) >> 32) * SLOT_BYTES
        table = self._table
        self.lookups += 1
        stored, entry = _read_slot(table, position)
        if stored == high and (entry & _LOW_MASK) == low:
            return self._base_offset + ((entry >> 24) & MAX_RELATIVE_OFFSET)
        # The map always keeps an empty slot (capacity < slots), so this loop ends.
        probes = 0
        while stored:
            probes += 1
            position += SLOT_BYTES
            if position == self._table_bytes:
                position = 0
            stored, entry = _read_slot(table, position)
            if stored == high and (entry & _LOW_MASK) == low:
                self.collisions += probes
                return self._base_offset + ((entry >> 24) & MAX_RELATIVE_OFFSET)
        self.collisions += probes
        return -1

    def get_many(self, keys: Iterable[bytes]) -> list[int]:
        """`[get(key) for key in keys]` in one call (the recopy pass looks up a batch's keys at once)."""
        table = self._table
        slots = self.slots
        table_bytes = self._table_bytes
        base = self._base_offset
        digest = blake2b
        parts = _digest_parts
        read_slot = _read_slot
        low_mask = _LOW_MASK
        max_relative = MAX_RELATIVE_OFFSET
        found: list[int] = []
        append = found.append
        lookups = 0
        collisions = 0
        for key in keys:
            lookups += 1
            high, low, home = parts(digest(key).digest())
            high = high or 1
            low &= low_mask
            position = ((home * slots) >> 32) * 15
            stored, entry = read_slot(table, position)
            while stored:
                if stored == high and (entry & low_mask) == low:
                    append(base + ((entry >> 24) & max_relative))
                    break
                collisions += 1
                position += 15
                if position == table_bytes:
                    position = 0
                stored, entry = read_slot(table, position)
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
