"""`place_replicas`: Kafka 4.3's StripedReplicaPlacer for brokers without a rack (one rack), the replica lists
of a new topic's or new partitions' replicas.

As Kafka's: the unfenced (here: running) brokers sorted, a random offset; each partition's first replica is the
next running broker, the others the next brokers of the running then the stopped list; the offset moves on by
one a partition, and once as many partitions as running brokers are placed the lists are shuffled. A replication
factor above the broker count (or below 1) is INVALID_REPLICATION_FACTOR with Kafka's message. Pure; any thread.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from minikafka.protocol.errors import InvalidReplicationFactorError


class _BrokerList:
    """Kafka's StripedReplicaPlacer.BrokerList."""

    def __init__(self, brokers: Sequence[int], rng: random.Random) -> None:
        self.brokers = sorted(brokers)
        self.index = 0
        self.epoch = 0
        self.offset = rng.randrange(len(self.brokers)) if self.brokers else 0

    def next(self, epoch: int) -> int:
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


def place_replicas(num_partitions: int, replication_factor: int, running: Sequence[int], stopped: Sequence[int],
                   rng: random.Random | None = None) -> list[list[int]]:
    """The replicas of `num_partitions` partitions, each `replication_factor` long, in placement order (the first
    one is the preferred leader)."""
    rng = rng or random.Random()
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(f"Invalid replication factor {replication_factor}: the replication "
                                            "factor must be positive.")
    if not running:
        raise InvalidReplicationFactorError("All brokers are currently fenced.")
    total = len(running) + len(stopped)
    if replication_factor > total:
        raise InvalidReplicationFactorError(f"The target replication factor of {replication_factor} cannot be "
                                            f"reached because only {total} broker(s) are registered.")
    unfenced, fenced = _BrokerList(running, rng), _BrokerList(stopped, rng)
    epoch = 0
    placements = []
    for _ in range(num_partitions):
        if epoch == len(unfenced.brokers) and len(unfenced.brokers) > 1:
            rng.shuffle(unfenced.brokers)
            rng.shuffle(fenced.brokers)
            epoch = 0
        replicas = [unfenced.next(epoch)]
        while len(replicas) < replication_factor:
            broker = unfenced.next(epoch)
            replicas.append(broker if broker >= 0 else fenced.next(epoch))
        placements.append(replicas)
        epoch += 1
    return placements
