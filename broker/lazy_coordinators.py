"""`LazyCoordinators`: the process's group, share-group and transaction coordinators, built at their first use.

Building them imports some sixty modules (a fifth of the start path's import time: bench/startup.py), which a
broker that never sees a group, share-group or transactional request (most test fixtures, producer-only clients)
need not pay before it answers its first Metadata. `KafkaServer` builds them right after its listeners start when
the log dir already holds one of their topics (their state must be loaded, and a transaction left in Prepare*
completed, whether or not a client asks); otherwise the first request that needs one builds all three, in the
event-loop thread, and starts their load, which then finds nothing to read. The three are built together because
they refer to one another (the share coordinator to the group store, the marker writer to the group coordinator).

Event-loop thread only (building starts the loading task).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minikafka.broker.groups.group_coordinator import GroupCoordinator
    from minikafka.broker.share.share_coordinator import ShareCoordinator
    from minikafka.broker.transactions.transaction_coordinator import TransactionCoordinator

#: the coordinators' topics (`OFFSETS_TOPIC`, `SHARE_GROUP_STATE_TOPIC`, `TRANSACTION_STATE_TOPIC`, named here so that
#: checking for them imports none of the coordinators' modules): a log dir holding one has state to load
COORDINATOR_TOPICS = ("__consumer_offsets", "__share_group_state", "__transaction_state")


@dataclass(frozen=True)
class CoordinatorSet:
    """The three coordinators, once built."""

    group: GroupCoordinator
    share: ShareCoordinator | None  # None: share groups off (handler-level tests)
    txn: TransactionCoordinator


class LazyCoordinators:
    """Owns the built `CoordinatorSet` (None until the first `get`); `build` makes it and starts its load."""

    def __init__(self, build: Callable[[], CoordinatorSet]) -> None:
        self._build = build
        self.built: CoordinatorSet | None = None

    def get(self) -> CoordinatorSet:
        if self.built is None:
            self.built = self._build()
        return self.built
