"""`ApiKey` and `SUPPORTED_VERSIONS`: the one source of truth for what ApiVersions advertises.

Only implemented APIs are listed (advertising an API makes clients use it). Ranges follow the recommended
column of kafka-protocol-notes §2. Two deliberate quirks, both as Apache Kafka 4.x does: Produce is
advertised from v0 (older librdkafka stops compressing otherwise) although only v3+ is accepted, and
JoinGroup/SyncGroup/Heartbeat/LeaveGroup from v0 (older librdkafka gates its group consumer on it).
Fetch is 4-18 as Apache Kafka 4.3.1 advertises it (4.0 stops at 17; v18 only adds a follower's tagged field):
incremental fetch sessions (KIP-227) and, from v13, topic ids (KIP-516). The admin describe APIs
(DescribeLogDirs, DescribeCluster, DescribeProducers, DescribeTopicPartitions) use Kafka 4.x's ranges.
The transaction APIs use Kafka 4.x's ranges for transaction version 2 (KIP-890 part 2): Produce to v12 (v12:
the first transactional batch adds its partition), EndTxn v5 (epoch bump per transaction), TxnOffsetCommit v5,
AddPartitionsToTxn v4-5 (the broker's batched verify/add form); Produce v13 (topic ids) is not served.
ListConfigResources (74) is 0-1 (v0 was ListClientMetricsResources, v1 lists every config resource type).
GetTelemetrySubscriptions/PushTelemetry (71/72) are absent on purpose: Apache Kafka 4.x advertises them only
when a client-telemetry receiver plugin is configured, so clients never send them here.
"""

from __future__ import annotations

from enum import IntEnum


class ApiKey(IntEnum):
    """Kafka request API keys (only the ones minikafka knows about)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


#: (min, max) advertised per implemented API.
SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 12),
    ApiKey.FETCH: (4, 18),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 5),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    # KIP-848 consumer groups, as Apache Kafka 4.x advertises them
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.DELETE_GROUPS: (0, 2),
    # PREFERRED (v0+) and UNCLEAN (v1+) elections among this process's brokers, as Apache Kafka 4.3.1
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 5),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    # SaslHandshake v0 stays advertised as in Kafka 4 (KIP-896 kept it; librdkafka needs v0 in the range)
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    # v0 was ListClientMetricsResources; v1 (KIP-1142) lists every config resource type, as Kafka 4.3.1
    ApiKey.LIST_CONFIG_RESOURCES: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    # KIP-932 share groups, as Apache Kafka 4.3.1 advertises them
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
}

#: Versions advertised but refused (the connection is closed, as Kafka 4 does for Produce v0-2).
ADVERTISED_ONLY: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 2),
}


def _accepted_versions() -> frozenset[tuple[int, int]]:
    """Every (api key, version) in SUPPORTED_VERSIONS and not in ADVERTISED_ONLY."""
    accepted: set[tuple[int, int]] = set()
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        refused = ADVERTISED_ONLY.get(key)
        accepted.update((int(key), version) for version in range(low, high + 1)
                        if refused is None or not refused[0] <= version <= refused[1])
    return frozenset(accepted)


#: `is_accepted`'s answers, computed once: every request asks (an ApiKey hashes as its int value)
_ACCEPTED_VERSIONS = _accepted_versions()


def is_accepted(api_key: int, api_version: int) -> bool:
    """True when a request with this key and version is decoded and served."""
    return (api_key, api_version) in _ACCEPTED_VERSIONS
