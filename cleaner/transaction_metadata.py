"""Transaction tracking during one cleaning round (Kafka's CleanedTransactionMetadata, spec §2.5).

Decides, batch by batch in log order, whether a batch's records may be discarded because they belong to an
aborted transaction, and whether a COMMIT/ABORT marker is still needed. Aborted transactions come from the
segments' transaction indexes (`.txnindex`); the entries still backed by data after the round go into the
cleaned segment's index.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from minikafka.protocol.records import RecordBatch
from minikafka.protocol.records.builder import CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT, parse_control_record_type
from minikafka.storage.transaction_index import AbortedTransaction


@dataclass(slots=True)
class _OngoingAborted:
    transaction: AbortedTransaction
    last_obsolete_offset: int | None = None


class CleanedTransactionMetadata:
    """Ongoing committed / aborted transactions seen so far in one round.

    Owns the round's pending aborted-transaction queue. Not thread-safe: one instance per round.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTransaction]] = []
        self._sequence = 0
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _OngoingAborted] = {}
        #: Aborted-transaction entries still backed by data; the shell writes them to the new .txnindex.
        self.retained_aborted_transactions: list[AbortedTransaction] = []

    def add_aborted_transactions(self, transactions: Iterable[AbortedTransaction]) -> None:
        for transaction in transactions:
            heapq.heappush(self._pending, (transaction.first_offset, self._sequence, transaction))
            self._sequence += 1

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, _, transaction = heapq.heappop(self._pending)
            self._ongoing_aborted.setdefault(transaction.producer_id, _OngoingAborted(transaction))

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """Return True if the marker may be discarded (after its delete horizon)."""
        self._consume_aborted_up_to(batch.last_offset)
        marker = next(iter(batch.records()), None)
        if marker is None:
            return True  # an empty control batch was already cleaned
        control_type = parse_control_record_type(marker.key)
        producer_id = batch.producer_id
        if control_type == CONTROL_TYPE_ABORT:
            ongoing = self._ongoing_aborted.pop(producer_id, None)
            if ongoing is not None and ongoing.last_obsolete_offset is not None:
                # Retain the marker until every batch of the transaction has been removed.
                self.retained_aborted_transactions.append(ongoing.transaction)
                return False
            return True
        if control_type == CONTROL_TYPE_COMMIT:
            # Discardable if no data batch of this transaction was read in this round.
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_data_batches_read(self, last_offset: int) -> None:
        """`on_batch_read` for consecutive non-transactional data batches ending at `last_offset` (never discarded)."""
        self._consume_aborted_up_to(last_offset)

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """Return True if this data batch belongs to an aborted transaction (its records are discarded)."""
        self._consume_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(batch.producer_id)
        if ongoing is not None:
            ongoing.last_obsolete_offset = batch.last_offset
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False
