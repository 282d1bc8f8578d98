"""`TransactionCoordinator`: Kafka's transaction coordinator for every transactional id of this node —
InitProducerId (transactional), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the produce-side verification
(KIP-890 part 1), the implicit AddPartitionsToTxn and epoch bump per transaction of transaction version 2
(KIP-890 part 2) and the timeout of transactions.

Modelled on Apache Kafka's TransactionCoordinator: the same checks in the same order and the same error
codes. Each state change is written to `__transaction_state` before it is applied. EndTxn runs the whole
two-phase commit inline: PrepareCommit/PrepareAbort written, a marker written to every partition, then
CompleteCommit/CompleteAbort written; a marker that cannot be written leaves the transaction in Prepare*
(clients get CONCURRENT_TRANSACTIONS) and the periodic task retries it. Event-loop thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from minikafka.broker.groups.scheduler import Cancellable, Scheduler
from minikafka.broker.transactions.config import TransactionConfig
from minikafka.broker.transactions.transaction_marker_writer import TxnMarkerWriter
from minikafka.broker.transactions.transaction_metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from minikafka.broker.transactions.transaction_state_manager import TransactionStateManager
from minikafka.broker.transactions.transaction_version import (
    TV_0,
    TV_2,
    SupportedOperation,
    supports_epoch_bump,
)
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.clock import Clock

log = logging.getLogger(__name__)

#: The leader epoch of the `__transaction_state` partition; a single node is always at 0.
COORDINATOR_EPOCH = 0

_S = TransactionState


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class EndTxnResult:
    """EndTxn's answer; v5 (TV_2) clients continue under `producer_id`/`producer_epoch` (the bumped epoch)."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class _NeedProducerId:
    """`_prepare_init` or a TV_2 EndTxn asks for a fresh producer id (epoch exhausted) before it can decide."""


_NEED_PRODUCER_ID = _NeedProducerId()


class TransactionCoordinator:
    """Owns the transaction state machine's request handling, marker completion and timers; the cache lives
    in the `TransactionStateManager`, markers go through the `TxnMarkerWriter`."""

    def __init__(
        self,
        config: TransactionConfig,
        manager: TransactionStateManager,
        markers: TxnMarkerWriter,
        allocate_producer_id: Callable[[], Awaitable[int]],
        scheduler: Scheduler,
        clock: Clock,
    ) -> None:
        self.config = config
        self.manager = manager
        self.markers = markers
        self.allocate_producer_id = allocate_producer_id
        self.scheduler = scheduler
        self.clock = clock
        self.active = False
        self._timers: dict[str, Cancellable] = {}
        #: Partitions already holding this transaction's marker, so a retry writes only the rest.
        self._markers_written: dict[str, set[TopicPartition]] = {}

    # -- lifecycle ---------------------------------------------------------------------------------------
    async def startup(self) -> None:
        """Rebuild every id from `__transaction_state`, then finish transactions left in Prepare* by writing
        their markers again; Ongoing ones keep running against their timeout."""
        self.active = True
        await self.manager.load_all()
        for metadata in list(self.manager.transactions.values()):
            if metadata.state.is_prepare:
                self._complete(metadata)
        config = self.config
        self._schedule(config.abort_timed_out_transaction_cleanup_interval_ms, self.abort_timed_out_transactions)
        self._schedule(config.remove_expired_transaction_cleanup_interval_ms, self.remove_expired_transactional_ids)

    def _schedule(self, interval_ms: int, action: Callable[[], object]) -> None:
        name = getattr(action, "__name__", repr(action))

        def run() -> None:
            if not self.active:
                return
            try:
                action()
            except Exception:
                log.exception("transaction coordinator task %s failed; it will run again", name)
            finally:
                self._schedule(interval_ms, action)

        self._timers[name] = self.scheduler.call_later(interval_ms, run)

    def shutdown(self) -> None:
        self.active = False
        for timer in self._timers.values():
            timer.cancel()

    def status_error(self, transactional_id: str | None) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.manager.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    # -- InitProducerId ----------------------------------------------------------------------------------
    async def handle_init_producer_id(
        self, transactional_id: str, txn_timeout_ms: int, producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> InitProducerIdResult:
        error = self.status_error(transactional_id)
        if error is not ErrorCode.NONE:
            return InitProducerIdResult(error)
        if not 0 < txn_timeout_ms <= self.config.max_timeout_ms:
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        expected = None if producer_id == NO_PRODUCER_ID and producer_epoch == NO_PRODUCER_EPOCH else (
            producer_id, producer_epoch)
        try:
            await self.manager.ensure_topic()
        except KafkaError as exc:
            log.warning("cannot create __transaction_state: %r", exc)
            return InitProducerIdResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        metadata = self.manager.get(transactional_id)
        if metadata is None:
            new_id = await self.allocate_producer_id()
            metadata = self.manager.put_if_not_exists(
                TransactionMetadata.new(transactional_id, new_id, txn_timeout_ms, self.clock.time_ms()))
        rotated_id: int | None = None
        while True:
            result = self._prepare_init(metadata, txn_timeout_ms, expected, rotated_id)
            if not isinstance(result, _NeedProducerId):
                break
            rotated_id = await self.allocate_producer_id()
        if isinstance(result, ErrorCode):
            return InitProducerIdResult(result)
        error = self.manager.append_transaction_to_log(metadata, result)
        if error is not ErrorCode.NONE:
            return InitProducerIdResult(error)
        log.info("Initialized transactional id %s with producer id %d and epoch %d", transactional_id,
                 metadata.producer_id, metadata.producer_epoch)
        return InitProducerIdResult(ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch)

    def _prepare_init(
        self, metadata: TransactionMetadata, txn_timeout_ms: int, expected: tuple[int, int] | None,
        rotated_id: int | None, fenced_ongoing: bool = False,
    ) -> TxnTransitMetadata | ErrorCode | _NeedProducerId:
        if expected is not None and not metadata.is_valid_producer_id(*expected):
            return ErrorCode.PRODUCER_FENCED
        now_ms = self.clock.time_ms()
        if metadata.state.is_prepare:
            return ErrorCode.CONCURRENT_TRANSACTIONS if not self._complete(metadata) else self._prepare_init(
                metadata, txn_timeout_ms, expected, rotated_id, fenced_ongoing)
        if metadata.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                if rotated_id is None:
                    return _NEED_PRODUCER_ID
                return metadata.prepare_producer_id_rotation(rotated_id, txn_timeout_ms, now_ms, expected is not None)
            transit = metadata.prepare_increment_producer_epoch(
                txn_timeout_ms, None if expected is None else expected[1], now_ms)
            return ErrorCode.PRODUCER_FENCED if transit is None else transit
        if metadata.state is _S.ONGOING and not fenced_ongoing:
            # Kafka fences the current producer and aborts its transaction; the abort completes inline here,
            # so the new producer's epoch bump follows at once instead of after a CONCURRENT_TRANSACTIONS retry.
            metadata.fence_producer_epoch()
            self._end_transaction(metadata, metadata.producer_id, metadata.producer_epoch, False, from_client=False)
            return self._prepare_init(metadata, txn_timeout_ms, expected, rotated_id, fenced_ongoing=True)
        return ErrorCode.CONCURRENT_TRANSACTIONS

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------------------------
    def handle_add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition],
        client_transaction_version: int = TV_0,
    ) -> ErrorCode:
        """One error for the whole request (the handler answers it for every partition)."""
        error = self.status_error(transactional_id)
        if error is not ErrorCode.NONE:
            return error
        metadata = self.manager.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.state.is_prepare:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        wanted = set(partitions)
        if metadata.state is _S.ONGOING and wanted <= metadata.topic_partitions:
            return ErrorCode.NONE
        return self.manager.append_transaction_to_log(
            metadata, metadata.prepare_add_partitions(wanted, self.clock.time_ms(), client_transaction_version))

    def verify_partition(
        self, transactional_id: str | None, producer_id: int, producer_epoch: int, partition: TopicPartition,
        operation: SupportedOperation = SupportedOperation.DEFAULT_ERROR,
    ) -> ErrorCode:
        """KIP-890: a transactional produce (or TxnOffsetCommit) must belong to the producer's ongoing
        transaction on that partition (part 1), or — a TV_2 request (`ADD_PARTITION`) — adds the partition to
        it (part 2, Kafka's AddPartitionsToTxnManager with verifyOnly=false). While the coordinator loads,
        the answer is retriable; CONCURRENT_TRANSACTIONS (Prepare*) too."""
        if not self.active or self.manager.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if operation is SupportedOperation.ADD_PARTITION and transactional_id:
            error = self.handle_add_partitions(transactional_id, producer_id, producer_epoch, [partition], TV_2)
            # AddPartitionsToTxnManager: a fenced producer's produce answers INVALID_PRODUCER_EPOCH.
            return ErrorCode.INVALID_PRODUCER_EPOCH if error is ErrorCode.PRODUCER_FENCED else error
        metadata = self.manager.get(transactional_id) if transactional_id else None
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_TXN_STATE
        if producer_epoch < metadata.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if producer_epoch != metadata.producer_epoch:
            return ErrorCode.INVALID_TXN_STATE
        if metadata.state is _S.ONGOING and partition in metadata.topic_partitions:
            return ErrorCode.NONE
        if operation is SupportedOperation.GENERIC_ERROR_SUPPORTED and not metadata.state.is_prepare:
            return ErrorCode.TRANSACTION_ABORTABLE  # KIP-890: clients that know it abort the transaction
        return ErrorCode.INVALID_TXN_STATE

    def verify_partitions_in_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with verifyOnly (Kafka's handleVerifyPartitionsInTransaction): one error for
        every partition, or per partition NONE / TRANSACTION_ABORTABLE (not in the transaction)."""
        wanted = list(partitions)
        metadata = self.manager.get(transactional_id)
        error = self.status_error(transactional_id)
        if error is ErrorCode.NONE:
            if metadata is None or metadata.producer_id != producer_id:
                error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
            elif metadata.producer_epoch != producer_epoch:
                error = ErrorCode.PRODUCER_FENCED
            elif metadata.state.is_prepare:
                error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not ErrorCode.NONE or metadata is None:
            return {tp: error for tp in wanted}
        return {tp: ErrorCode.NONE if tp in metadata.topic_partitions else ErrorCode.TRANSACTION_ABORTABLE
                for tp in wanted}

    # -- EndTxn ------------------------------------------------------------------------------------------
    def handle_end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> ErrorCode:
        error = self.status_error(transactional_id)
        if error is not ErrorCode.NONE:
            return error
        metadata = self.manager.get(transactional_id)
        if metadata is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return self._end_transaction(metadata, producer_id, producer_epoch, commit, from_client=True)

    async def handle_end_txn_tv2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> EndTxnResult:
        """EndTxn v5 (a TV_2 client): the epoch is bumped with PrepareX, the markers carry the bumped epoch and
        the answer tells the client the id and epoch to continue under (a new producer id at epoch 0 once the
        epoch reaches Short.MAX_VALUE - 1). Retries are recognised by the epoch the client still holds."""
        error = self.status_error(transactional_id)
        if error is not ErrorCode.NONE:
            return EndTxnResult(error)
        metadata = self.manager.get(transactional_id)
        if metadata is None:
            return EndTxnResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        next_producer_id: int | None = None
        while True:
            result = self._end_transaction_tv2(metadata, producer_id, producer_epoch, commit, True, next_producer_id)
            if not isinstance(result, _NeedProducerId):
                break
            next_producer_id = await self.allocate_producer_id()
        if result is not ErrorCode.NONE:
            return EndTxnResult(result)
        if metadata.state.is_prepare and metadata.next_producer_id != NO_PRODUCER_ID:
            return EndTxnResult(ErrorCode.NONE, metadata.next_producer_id, 0)  # markers pending: what Complete* holds
        return EndTxnResult(ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch)

    def _end_transaction(
        self, metadata: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool, from_client: bool
    ) -> ErrorCode:
        if not from_client and supports_epoch_bump(metadata.client_transaction_version):
            # A fence (timeout, a new producer) aborts a TV_2 transaction by TV_2's rules: one more epoch bump.
            fenced = self._end_transaction_tv2(metadata, producer_id, producer_epoch, commit, False, None)
            assert not isinstance(fenced, _NeedProducerId)  # a fence never rotates the producer id
            return fenced
        if producer_id != metadata.producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if (from_client and producer_epoch != metadata.producer_epoch) or producer_epoch < metadata.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state is _S.ONGOING:
            target = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            error = self.manager.append_transaction_to_log(
                metadata, metadata.prepare_abort_or_commit(target, self.clock.time_ms()))
            if error is not ErrorCode.NONE:
                metadata.has_failed_epoch_fence = not from_client
                return error
            metadata.has_failed_epoch_fence = False
            self._complete(metadata)
            return ErrorCode.NONE
        if state is (_S.COMPLETE_COMMIT if commit else _S.COMPLETE_ABORT):
            return ErrorCode.NONE  # a retry of the EndTxn that completed it
        if state is (_S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT):
            return ErrorCode.NONE if self._complete(metadata) else ErrorCode.CONCURRENT_TRANSACTIONS
        log.info("EndTxn(%s) for transactional id %s in state %s: INVALID_TXN_STATE",
                 "commit" if commit else "abort", metadata.transactional_id, state.state_name)
        return ErrorCode.INVALID_TXN_STATE

    def _end_transaction_tv2(
        self, metadata: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool, from_client: bool,
        next_producer_id: int | None,
    ) -> ErrorCode | _NeedProducerId:
        """Kafka's endTransaction for transaction version 2 (TransactionCoordinator, 4.3). Not from the client:
        an epoch fence, whose epoch the caller already bumped in memory."""
        state = metadata.state
        fence = not from_client
        retry_on_overflow = (not fence and metadata.last_producer_id == producer_id
                             and producer_epoch == MAX_PRODUCER_EPOCH - 1 and metadata.producer_epoch == 0)
        retry_on_epoch_bump = not fence and metadata.producer_epoch == producer_epoch + 1
        if fence:
            valid_epoch = producer_epoch >= metadata.producer_epoch
        elif state.is_prepare:
            valid_epoch = retry_on_epoch_bump
        elif state.is_complete:
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == metadata.producer_epoch
        else:
            valid_epoch = producer_epoch == metadata.producer_epoch
        is_retry = retry_on_epoch_bump or retry_on_overflow
        if metadata.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if not valid_epoch:
            return ErrorCode.PRODUCER_FENCED
        target: TransactionState | None = None
        no_partition_added = True
        if state is _S.ONGOING:
            target, no_partition_added = (_S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT), False
        elif state is _S.COMPLETE_COMMIT:
            if commit:  # a retried commit is done; a new abort (of nothing) bumps the epoch
                return ErrorCode.NONE if is_retry else self._invalid_state(metadata, commit)
            if is_retry:
                return self._invalid_state(metadata, commit)
            target = _S.PREPARE_ABORT
        elif state is _S.COMPLETE_ABORT:
            if commit:
                return self._invalid_state(metadata, commit)
            if is_retry:
                return ErrorCode.NONE
            target = _S.PREPARE_ABORT
        elif state.is_prepare:
            if commit != (state is _S.PREPARE_COMMIT):
                return self._invalid_state(metadata, commit)
            return ErrorCode.NONE if self._complete(metadata) else ErrorCode.CONCURRENT_TRANSACTIONS
        elif state is _S.EMPTY and not commit:
            target = _S.PREPARE_ABORT
        if target is None:
            return self._invalid_state(metadata, commit)
        rotated_id = NO_PRODUCER_ID
        if not fence and metadata.is_producer_epoch_exhausted:
            if next_producer_id is None:
                return _NEED_PRODUCER_ID
            rotated_id = next_producer_id
        error = self.manager.append_transaction_to_log(metadata, metadata.prepare_abort_or_commit(
            target, self.clock.time_ms(), TV_2, rotated_id, no_partition_added))
        if error is not ErrorCode.NONE:
            metadata.has_failed_epoch_fence = fence
            return error
        metadata.has_failed_epoch_fence = False
        self._complete(metadata)
        return ErrorCode.NONE

    @staticmethod
    def _invalid_state(metadata: TransactionMetadata, commit: bool) -> ErrorCode:
        log.info("EndTxn(%s) for transactional id %s in state %s: INVALID_TXN_STATE",
                 "commit" if commit else "abort", metadata.transactional_id, metadata.state.state_name)
        return ErrorCode.INVALID_TXN_STATE

    def _complete(self, metadata: TransactionMetadata) -> bool:
        """Write the markers of a Prepare* transaction, then its Complete* state. False: retry later."""
        commit = metadata.state is _S.PREPARE_COMMIT
        written = self._markers_written.setdefault(metadata.transactional_id, set())
        failed = False
        for topic, partition in sorted(metadata.topic_partitions - written):
            try:
                self.markers.write_marker(topic, partition, metadata.producer_id, metadata.producer_epoch,
                                          COORDINATOR_EPOCH, commit)
            except KafkaError as exc:
                if exc.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    log.info("%s-%d is gone; no marker needed for %s", topic, partition, metadata.transactional_id)
                else:
                    log.warning("writing the %s marker of %s to %s-%d failed: %r", "COMMIT" if commit else "ABORT",
                                metadata.transactional_id, topic, partition, exc)
                    failed = True
                    continue
            written.add((topic, partition))
        if failed:
            return False
        error = self.manager.append_transaction_to_log(metadata, metadata.prepare_complete(self.clock.time_ms()))
        if error is not ErrorCode.NONE:
            return False
        self._markers_written.pop(metadata.transactional_id, None)
        return True

    # -- DescribeTransactions / ListTransactions ---------------------------------------------------------
    def describe_transaction(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        error = self.status_error(transactional_id)
        if error is not ErrorCode.NONE:
            return error, None
        metadata = self.manager.get(transactional_id)
        if metadata is None or metadata.state is _S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, metadata

    def list_transactions(
        self, state_names: set[str], producer_ids: set[int], min_duration_ms: int
    ) -> tuple[ErrorCode, list[TransactionMetadata]]:
        """Kafka's listTransactions: every filter given must match; a duration filter keeps transactions
        running for longer than it."""
        error = self.status_error("-")
        if error is not ErrorCode.NONE:
            return error, []
        now_ms = self.clock.time_ms()
        return ErrorCode.NONE, [
            metadata
            for metadata in self.manager.transactions.values()
            if metadata.state is not _S.DEAD
            and (not state_names or metadata.state.state_name in state_names)
            and (not producer_ids or metadata.producer_id in producer_ids)
            and (min_duration_ms < 0 or (metadata.state is _S.ONGOING
                                         and now_ms - metadata.txn_start_timestamp_ms > min_duration_ms))
        ]

    # -- timers ------------------------------------------------------------------------------------------
    def abort_timed_out_transactions(self) -> int:
        """Abort every Ongoing transaction past its timeout, fencing its producer (epoch bump); retry the
        completion of transactions stuck in Prepare*. Returns how many were aborted."""
        if self.manager.loading:
            return 0
        aborted = 0
        for metadata in self.manager.timed_out_transactions(self.clock.time_ms()):
            log.info("Aborting transaction %s of producer id %d: timed out after %d ms", metadata.transactional_id,
                     metadata.producer_id, metadata.txn_timeout_ms)
            metadata.fence_producer_epoch()
            if self._end_transaction(metadata, metadata.producer_id, metadata.producer_epoch, False,
                                     from_client=False) is ErrorCode.NONE:
                aborted += 1
        for metadata in list(self.manager.transactions.values()):
            if metadata.state.is_prepare:
                self._complete(metadata)
        return aborted

    def remove_expired_transactional_ids(self) -> int:
        if self.manager.loading:
            return 0
        expired = self.manager.expired_transactional_ids(self.clock.time_ms())
        return sum(1 for metadata in expired if self.manager.remove_expired(metadata) is ErrorCode.NONE)
