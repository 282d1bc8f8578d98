"""`CoordinatorRouting`: which broker of the process coordinates a group id, a transactional id or a share
partition's state, as Kafka decides it: the leader of the key's partition of the coordinator's internal topic.

As Kafka's GroupCoordinatorService, TransactionStateManager and ShareCoordinatorService `partitionFor` pick a
partition of `__consumer_offsets` (group id), `__transaction_state` (transactional id) and `__share_group_state`
(key "groupId:topicId:partition"), with the one hash the coordinators store their records by
(`coordinator_records.partition_for`: Kafka's `Utils.abs(hashCode) % partitions` but for negative hash codes, see
there). The coordinator is that partition's leader; a leaderless partition has no
coordinator (FindCoordinator: COORDINATOR_NOT_AVAILABLE; the coordinator's requests: NOT_COORDINATOR everywhere).
Leadership moves (elect_leader, stop_broker, `move_coordinator`) move the coordinator with it; the coordinators'
state stays one copy in the process, so a move changes only which broker answers.

With one broker, or before the internal topic exists (the first FindCoordinator creates it), the first broker
coordinates every key, as before several brokers existed. Event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from minikafka.broker.cluster import Cluster
from minikafka.broker.groups.coordinator_partitioning import partition_for
from minikafka.broker.partition_states import PartitionStates
from minikafka.protocol.api_keys import ApiKey

GROUP = "group"
TRANSACTION = "transaction"
SHARE = "share"
#: coordinator kind -> its internal topic
TOPICS = {GROUP: "__consumer_offsets", TRANSACTION: "__transaction_state", SHARE: "__share_group_state"}
#: coordinator kind -> the broker config naming its internal topic's replication factor (Kafka's default 3)
REPLICATION_FACTOR_KEYS = {
    GROUP: "offsets.topic.replication.factor",
    TRANSACTION: "transaction.state.log.replication.factor",
    SHARE: "share.coordinator.state.topic.replication.factor",
}
#: FindCoordinator key_type -> coordinator kind (0 group, 1 transaction, 2 share: KIP-932)
KEY_TYPES = {0: GROUP, 1: TRANSACTION, 2: SHARE}


def internal_topic_replication_factor(topic: str, props: Mapping[str, str], broker_count: int) -> int:
    """The replication factor the coordinators create `topic` with: its config (Kafka's default 3). A single broker
    keeps one replica, as minikafka always did; with several, a factor above the broker count is refused by the
    placer (INVALID_REPLICATION_FACTOR: the coordinator stays unavailable, as Kafka's does)."""
    kind = next(kind for kind, name in TOPICS.items() if name == topic)
    return 1 if broker_count == 1 else int(props.get(REPLICATION_FACTOR_KEYS[kind], "3"))


class CoordinatorRouting:
    """Answers "who coordinates this key" from the partitions' leaders (`PartitionStates`)."""

    def __init__(self, cluster: Cluster, partitions: PartitionStates,
                 partition_count: Callable[[str], int | None]) -> None:
        self.cluster = cluster
        self.partitions = partitions
        self._partition_count = partition_count

    def partition_for(self, kind: str, key: str) -> int | None:
        """The key's partition of the kind's internal topic; None while that topic does not exist."""
        count = self._partition_count(TOPICS[kind])
        return None if not count else partition_for(key, count)

    def coordinator_id(self, kind: str, key: str) -> int:
        """The broker that coordinates `key`, or NO_LEADER (-1) while its partition has no leader."""
        partition = self.partition_for(kind, key)
        if len(self.cluster.nodes) == 1 or partition is None:
            return self.cluster.coordinator_id
        return self.partitions.get(TOPICS[kind], partition).leader

    def is_coordinator(self, node_id: int, kind: str, key: str) -> bool:
        return len(self.cluster.nodes) == 1 or self.coordinator_id(kind, key) == node_id


def _single_key(api_key: ApiKey, version: int, request: Any) -> tuple[str, str] | None:
    """(kind, key) of a request one coordinator serves whole, or None (not a coordinator request, or batched)."""
    if api_key in _GROUP_APIS:
        return GROUP, request.group_id
    if api_key is ApiKey.OFFSET_FETCH and version < 8:
        return GROUP, request.group_id
    if api_key in (ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN):
        return TRANSACTION, request.transactional_id
    if api_key is ApiKey.INIT_PRODUCER_ID and getattr(request, "transactional_id", None) is not None:
        return TRANSACTION, request.transactional_id
    return None


#: APIs sent to the coordinator of their one group id (TxnOffsetCommit goes to the group's coordinator too)
_GROUP_APIS = frozenset({
    ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_DELETE, ApiKey.TXN_OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS, ApiKey.DELETE_SHARE_GROUP_OFFSETS,
})

#: every API `_single_key` may route: the others (Produce, Fetch, ...) leave `misrouted` at its first test
_COORDINATOR_APIS = _GROUP_APIS | {ApiKey.OFFSET_FETCH, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
                                   ApiKey.INIT_PRODUCER_ID}


def misrouted(routing: CoordinatorRouting | None, node_id: int, api_key: ApiKey, version: int,
              request: Any) -> bool:
    """True when `request` needs one coordinator and broker `node_id` is not it (the answer: NOT_COORDINATOR)."""
    if api_key not in _COORDINATOR_APIS or routing is None or request is None or len(routing.cluster.nodes) == 1:
        return False
    found = _single_key(api_key, version, request)
    return found is not None and not routing.is_coordinator(node_id, *found)


def elsewhere(routing: CoordinatorRouting | None, node_id: int, kind: str, key: str) -> bool:
    """True when broker `node_id` does not coordinate `key` (a batched request's entry answers NOT_COORDINATOR)."""
    return routing is not None and not routing.is_coordinator(node_id, kind, key)
