"""`BrokerContext`: the components a request handler may use, wired once by `broker/server.py`.

One per broker of the process (`minikafka.brokers`), differing only in `config`. Immutable after startup; handlers
read it from the event-loop thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minikafka.broker.admin_manager import AdminManager
from minikafka.broker.cluster import Cluster
from minikafka.broker.config import KafkaConfig
from minikafka.broker.coordinator_routing import CoordinatorRouting
from minikafka.broker.fetch_manager import FetchManager
from minikafka.broker.lazy_coordinators import LazyCoordinators
from minikafka.broker.partition_states import PartitionStates
from minikafka.broker.quotas.quota_managers import QuotaManagers
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.security.authorizer_config import AuthorizerConfig
from minikafka.broker.security.scram_credentials import ScramCredentialStore
from minikafka.storage.producer_id_manager import ProducerIdManager

if TYPE_CHECKING:
    from minikafka.broker.groups.group_coordinator import GroupCoordinator
    from minikafka.broker.security.authorizer import StandardAuthorizer
    from minikafka.broker.share.share_coordinator import ShareCoordinator
    from minikafka.broker.transactions.transaction_coordinator import TransactionCoordinator


@dataclass(frozen=True)
class BrokerContext:
    #: this broker's config (its node id and ports: each broker of the process has its own context)
    config: KafkaConfig
    #: the brokers of this process and whether each is running (shared)
    cluster: Cluster
    #: replicas, ISR, leader and leader epoch of every partition (shared)
    partitions: PartitionStates
    cluster_id: str
    replica_manager: ReplicaManager
    admin: AdminManager
    producer_ids: ProducerIdManager
    #: the group, share-group and transaction coordinators (shared), built at the first request that needs one
    lazy_coordinators: LazyCoordinators
    fetch_manager: FetchManager
    #: The ACL authorizer (`authorizer.class.name`); None: authorization is off, every request is allowed.
    authorizer: StandardAuthorizer | None = None
    #: SCRAM credentials (AlterUserScramCredentials, SCRAM authentication); in memory unless loaded from a log dir.
    scram_credentials: ScramCredentialStore = field(default_factory=ScramCredentialStore)
    #: Client quotas (Describe/AlterClientQuotas, KIP-219 throttling); in memory unless loaded from a log dir.
    quotas: QuotaManagers = field(default_factory=QuotaManagers)
    #: which broker coordinates each group / transactional id (shared); None in handler-level tests: this one
    coordinators: CoordinatorRouting | None = None

    @staticmethod
    def authorizer_for(config: KafkaConfig) -> StandardAuthorizer | None:
        """The authorizer `config` asks for, its ACLs loaded from the log dir (InvalidConfigError if unknown). Without
        one, the ACL machinery is not imported (the start path's budget, DESIGN.md)."""
        if not AuthorizerConfig.from_props(config.props).enabled:
            return None
        from minikafka.broker.security.authorizer import authorizer_from_props

        return authorizer_from_props(config.props, config.log_dir)

    @property
    def group_coordinator(self) -> GroupCoordinator:
        return self.lazy_coordinators.get().group

    @property
    def txn_coordinator(self) -> TransactionCoordinator:
        return self.lazy_coordinators.get().txn

    @property
    def share_coordinator(self) -> ShareCoordinator | None:
        """Share groups (KIP-932): membership, share partitions, share sessions."""
        return self.lazy_coordinators.get().share

    @property
    def node_id(self) -> int:
        return self.config.node_id
