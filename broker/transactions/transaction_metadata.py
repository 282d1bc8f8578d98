"""`TransactionMetadata`: one transactional id's producer id, epoch, state and partitions.

Kafka's TransactionMetadata: the eight states with their log ids and legal previous states, and the
`prepare_*` methods that compute the next state as a `TxnTransitMetadata` without changing anything. The
coordinator persists a transit to `__transaction_state` first and only then applies it with
`complete_transition`, so the cache never runs ahead of the log. Not thread-safe: the coordinator owns it
on the event-loop thread.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from minikafka.broker.transactions.transaction_version import TV_0, supports_epoch_bump

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32_767

TopicPartition = tuple[str, int]


class TransactionState(enum.Enum):
    """Kafka's TransactionState; `.id` is the int8 written as transaction_status."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @property
    def is_prepare(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)


_S = TransactionState
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    # TV_2 may abort a transaction with no partition added (from Empty or Complete*), as Kafka 4 allows.
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_valid_transition(current: TransactionState, target: TransactionState) -> bool:
    return current in _VALID_PREVIOUS[target]


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka bumps to a new producer id once the epoch reaches Short.MaxValue - 1."""
    return producer_epoch >= MAX_PRODUCER_EPOCH - 1


class InvalidTransitionError(Exception):
    """A transition the state machine forbids (a coordinator bug, never a client error)."""


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The next state of a transactional id, as written to `__transaction_state`."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp_ms: int
    txn_last_update_timestamp_ms: int
    #: TV_2: the producer id the client continues under once this transaction completes (epoch exhausted).
    next_producer_id: int = NO_PRODUCER_ID
    #: The transaction version of the client's request that made this transition (ClientTransactionVersion).
    client_transaction_version: int = TV_0


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp_ms: int = -1
    txn_last_update_timestamp_ms: int = -1
    #: Set once a timeout fence could not bump the epoch (exhausted); Kafka's hasFailedEpochFence.
    has_failed_epoch_fence: bool = False
    #: TV_2, between PrepareX and CompleteX of an epoch overflow: the producer id the client continues under.
    next_producer_id: int = NO_PRODUCER_ID
    #: The transaction version of the client that drove the last transition (TV_2: epoch bump per transaction).
    client_transaction_version: int = TV_0

    @classmethod
    def new(cls, transactional_id: str, producer_id: int, txn_timeout_ms: int, now_ms: int) -> TransactionMetadata:
        """A just-created id: epoch -1 (the first InitProducerId bumps it to 0), state Empty."""
        return cls(transactional_id, producer_id, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH,
                   txn_timeout_ms, TransactionState.EMPTY, set(), -1, now_ms)

    @classmethod
    def from_transit(cls, transactional_id: str, transit: TxnTransitMetadata) -> TransactionMetadata:
        return cls(transactional_id, transit.producer_id, transit.last_producer_id, transit.producer_epoch,
                   transit.last_producer_epoch, transit.txn_timeout_ms, transit.state, set(transit.topic_partitions),
                   transit.txn_start_timestamp_ms, transit.txn_last_update_timestamp_ms,
                   next_producer_id=transit.next_producer_id,
                   client_transaction_version=transit.client_transaction_version)

    # -- queries -----------------------------------------------------------------------------------------
    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def is_valid_producer_id(self, producer_id: int, producer_epoch: int) -> bool:
        """KIP-360: may a producer presenting (producer_id, producer_epoch) re-initialize this id?"""
        return (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == self.producer_id
            or (producer_id == self.last_producer_id and is_epoch_exhausted(producer_epoch))
        )

    def snapshot(self) -> TxnTransitMetadata:
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp_ms,
                                  self.txn_last_update_timestamp_ms, self.next_producer_id,
                                  self.client_transaction_version)

    # -- transitions (computed, not applied) -------------------------------------------------------------
    def _transit(self, state: TransactionState, **changes: object) -> TxnTransitMetadata:
        if not is_valid_transition(self.state, state):
            raise InvalidTransitionError(
                f"transactional id {self.transactional_id}: {self.state.state_name} -> {state.state_name}"
            )
        # As Kafka's prepareTransitionTo: the previous producer id of a transition is the id it leaves.
        changes.setdefault("last_producer_id", self.producer_id)
        return replace(self.snapshot(), state=state, **changes)  # type: ignore[arg-type]

    def prepare_increment_producer_epoch(
        self, txn_timeout_ms: int, expected_producer_epoch: int | None, now_ms: int
    ) -> TxnTransitMetadata | None:
        """InitProducerId on an idle id: the next epoch, or None (PRODUCER_FENCED) when the caller's
        expected epoch is neither the current nor the last one (a retry of a bump returns the same)."""
        if self.is_producer_epoch_exhausted:
            raise InvalidTransitionError(f"cannot bump exhausted epoch of {self.transactional_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_producer_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return None
        return self._transit(
            TransactionState.EMPTY, producer_epoch=epochs[0], last_producer_epoch=epochs[1],
            txn_timeout_ms=txn_timeout_ms, topic_partitions=frozenset(), txn_start_timestamp_ms=-1,
            txn_last_update_timestamp_ms=now_ms,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, txn_timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransitMetadata:
        """Epoch exhausted: continue under a fresh producer id at epoch 0."""
        return self._transit(
            TransactionState.EMPTY, producer_id=new_producer_id, last_producer_id=self.producer_id,
            producer_epoch=0, last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=txn_timeout_ms, topic_partitions=frozenset(), txn_start_timestamp_ms=-1,
            txn_last_update_timestamp_ms=now_ms,
        )

    def fence_producer_epoch(self) -> None:
        """Fence the producer of an ongoing transaction before the coordinator aborts it: the epoch is bumped
        in memory at once (Kafka's PrepareEpochFence, which is never written), the state stays Ongoing, and
        the PrepareAbort that follows carries the new epoch. A failed fence is not bumped twice."""
        if self.producer_epoch >= MAX_PRODUCER_EPOCH:
            raise InvalidTransitionError(f"cannot fence producer of {self.transactional_id} at max epoch")
        if not self.has_failed_epoch_fence:
            self.producer_epoch += 1
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    def prepare_add_partitions(
        self, partitions: set[TopicPartition], now_ms: int, client_transaction_version: int = TV_0
    ) -> TxnTransitMetadata:
        start_ms = now_ms if self.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT) else \
            self.txn_start_timestamp_ms
        return self._transit(TransactionState.ONGOING, topic_partitions=frozenset(self.topic_partitions | partitions),
                             txn_start_timestamp_ms=start_ms, txn_last_update_timestamp_ms=now_ms,
                             client_transaction_version=client_transaction_version)

    def prepare_abort_or_commit(
        self, state: TransactionState, now_ms: int, client_transaction_version: int = TV_0,
        next_producer_id: int = NO_PRODUCER_ID, no_partition_added: bool = False,
    ) -> TxnTransitMetadata:
        """PrepareCommit/PrepareAbort. TV_2 bumps the epoch here (the markers carry the new one), except an abort
        already at Short.MAX_VALUE; a TV_2 abort with no partition added starts its transaction now."""
        if not supports_epoch_bump(client_transaction_version):
            return self._transit(state, txn_last_update_timestamp_ms=now_ms,
                                 client_transaction_version=client_transaction_version)
        at_max = self.producer_epoch >= MAX_PRODUCER_EPOCH and state is _S.PREPARE_ABORT
        return self._transit(
            state, producer_epoch=self.producer_epoch if at_max else self.producer_epoch + 1,
            last_producer_epoch=self.producer_epoch, next_producer_id=next_producer_id,
            txn_start_timestamp_ms=now_ms if no_partition_added else self.txn_start_timestamp_ms,
            txn_last_update_timestamp_ms=now_ms, client_transaction_version=client_transaction_version,
        )

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        """CompleteCommit/CompleteAbort. After a TV_2 epoch overflow the id continues under the next producer
        id at epoch 0 (the last epoch stays the one the client last saw)."""
        state = _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            return self._transit(state, producer_id=self.next_producer_id, last_producer_id=self.producer_id,
                                 producer_epoch=0, next_producer_id=NO_PRODUCER_ID, topic_partitions=frozenset(),
                                 txn_last_update_timestamp_ms=now_ms)
        return self._transit(state, topic_partitions=frozenset(), next_producer_id=NO_PRODUCER_ID,
                             txn_last_update_timestamp_ms=now_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._transit(TransactionState.DEAD, topic_partitions=frozenset())

    # -- apply -------------------------------------------------------------------------------------------
    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """Apply a transit once it is durable (or, for PrepareEpochFence, which is never written, at once)."""
        if not is_valid_transition(self.state, transit.state):
            raise InvalidTransitionError(
                f"transactional id {self.transactional_id}: {self.state.state_name} -> {transit.state.state_name}"
            )
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.state
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms
        self.txn_last_update_timestamp_ms = transit.txn_last_update_timestamp_ms
        self.next_producer_id = transit.next_producer_id
        self.client_transaction_version = transit.client_transaction_version
