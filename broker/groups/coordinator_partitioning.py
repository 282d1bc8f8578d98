"""Which `__consumer_offsets` (or `__transaction_state`) partition coordinates a group id or transactional id.

A module of its own, free of the coordinator record types, because the broker's coordinator routing needs it on
the start path (DESIGN.md, the start path's budget). Stateless; any thread.
"""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(group_id: str, num_partitions: int) -> int:
    """A group id's (or transactional id's) coordinator partition: `(hashCode & 0x7fffffff) % partitions`.

    Kafka uses `Utils.abs(hashCode) % partitions`, which differs for every negative hash code ("my-group": 36 here,
    12 in Kafka). Log dirs written by every earlier minikafka place groups and transactional ids by this rule, and a
    key's records found in two partitions would be replayed in partition order on load, so an old state could win
    (stale offsets, a regressed producer epoch); Kafka's rule needs a one-time migration first (DESIGN.md)."""
    return (java_string_hash(group_id) & 0x7FFFFFFF) % num_partitions
