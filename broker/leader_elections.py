"""`elect_leader` and `balance_leaders`: the leader elections a client asks for (ElectLeaders, key 43) and the
ones `auto.leader.rebalance.enable` runs, with Kafka 4.3's controller rules (ReplicationControlManager.electLeader,
PartitionChangeBuilder.electPreferredLeader / electAnyLeader; with KIP-966's ELR, on by default in Kafka 4.3):

- PREFERRED: ELECTION_NOT_NEEDED when the first replica (the preferred one) already leads; it is elected when it
  is running and in the ISR; else another running ISR member when the partition has no leader; else
  PREFERRED_LEADER_NOT_AVAILABLE (the current leader stays).
- UNCLEAN: ELECTION_NOT_NEEDED when the partition has a leader; else the first running ISR member, or ELR
  member when the ISR is empty (a clean election), else the first running replica (unclean: the ISR becomes
  that replica alone), else ELIGIBLE_LEADERS_NOT_AVAILABLE. An unclean election through this API does not need
  `unclean.leader.election.enable` (Kafka's does not either).
- A topic or partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION with Kafka's messages.
Each election is a new leader epoch (`PartitionStates.change_leader`). Event-loop thread only.
"""

from __future__ import annotations

import logging
from enum import IntEnum
from typing import NamedTuple

from minikafka.broker.partition_states import NO_LEADER, PartitionState, PartitionStates
from minikafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class ElectionType(IntEnum):
    """Kafka's org.apache.kafka.common.ElectionType."""

    PREFERRED = 0
    UNCLEAN = 1


class ElectionResult(NamedTuple):
    error_code: ErrorCode
    error_message: str | None


_NONE = ElectionResult(ErrorCode.NONE, None)
#: Kafka's ApiError(Errors) messages: the error's default message
_NOT_NEEDED = ElectionResult(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
_PREFERRED_NOT_AVAILABLE = ElectionResult(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                          "The preferred leader was not available.")
_ELIGIBLE_NOT_AVAILABLE = ElectionResult(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                         "Eligible topic partition leaders are not available.")


def elect_leader(partitions: PartitionStates, topic: str, partition: int,
                 election_type: ElectionType) -> ElectionResult:
    """One partition's election of `election_type`, applied at once when it elects someone."""
    count = partitions.partition_count(topic)
    if count is None:
        return ElectionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
    if not 0 <= partition < count:
        return ElectionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}")
    state = partitions.get(topic, partition)
    if election_type is ElectionType.PREFERRED:
        return _elect_preferred(partitions, topic, partition, state)
    return _elect_unclean(partitions, topic, partition, state)


def balance_leaders(partitions: PartitionStates) -> int:
    """Kafka's maybeBalancePartitionLeaders: a preferred election for every partition led by another replica than
    its first; the number of leaders moved."""
    moved = 0
    for topic, states in partitions.items():
        for index, state in enumerate(states):
            if state.leader != state.replicas[0] and \
                    _elect_preferred(partitions, topic, index, state) == _NONE:
                moved += 1
    if moved:
        log.info("Leader rebalance: %d partition(s) moved to their preferred leader", moved)
    return moved


def _valid_leader(partitions: PartitionStates, state: PartitionState, replica: int) -> bool:
    """PartitionChangeBuilder.isValidNewLeader: in the ISR, or in the ELR when the ISR is empty (KIP-966), and
    running (unfenced)."""
    return (replica in state.isr or (not state.isr and replica in state.elr)) and \
        partitions.cluster.is_running(replica)


def _elect_preferred(partitions: PartitionStates, topic: str, partition: int,
                     state: PartitionState) -> ElectionResult:
    preferred = state.replicas[0]
    if state.leader == preferred:
        return _NOT_NEEDED
    if _valid_leader(partitions, state, preferred):
        partitions.change_leader(topic, partition, preferred)
        return _NONE
    if state.leader != NO_LEADER and _valid_leader(partitions, state, state.leader):
        return _PREFERRED_NOT_AVAILABLE
    other = next((replica for replica in state.replicas[1:] if _valid_leader(partitions, state, replica)), None)
    if other is None:
        return _PREFERRED_NOT_AVAILABLE
    partitions.change_leader(topic, partition, other)
    return _NONE


def _elect_unclean(partitions: PartitionStates, topic: str, partition: int,
                   state: PartitionState) -> ElectionResult:
    if state.leader != NO_LEADER:
        return _NOT_NEEDED
    clean = next((replica for replica in state.replicas if _valid_leader(partitions, state, replica)), None)
    if clean is not None:
        partitions.change_leader(topic, partition, clean)
        return _NONE
    unclean = next((replica for replica in state.replicas if partitions.cluster.is_running(replica)), None)
    if unclean is None:
        return _ELIGIBLE_NOT_AVAILABLE
    log.warning("Partition %s-%d: unclean election of replica %d (out of the ISR %s): records it lacks are lost",
                topic, partition, unclean, state.isr)
    partitions.change_leader(topic, partition, unclean, isr=[unclean])
    return _NONE
