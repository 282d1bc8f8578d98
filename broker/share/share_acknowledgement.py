"""Acknowledgement, release and lock expiry of a share partition's acquired records, as Apache Kafka 4.3.1's
`SharePartition.acknowledge`, `releaseAcquiredRecords` and its acquisition-lock timer task: all of a member's
acknowledgements apply or none (Kafka's error codes and messages), RELEASE and an expired lock make records
AVAILABLE again (ARCHIVED at the delivery count limit), RENEW extends locks; each returns the state batches to
write. Functions over a partition's `InFlightState`; the owning `SharePartition`'s thread only.
"""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.broker.share.in_flight_batch import NO_MEMBER
from minikafka.broker.share.in_flight_state import InFlightState, is_acquired
from minikafka.broker.share.share_types import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AcknowledgementBatch,
    AcknowledgeType,
    PersisterStateBatch,
    RecordState,
    ShareAcknowledgeError,
    ShareGroupConfig,
)

__all__ = ["acknowledge", "expire_acquisition_locks", "release_acquired_records"]

_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ARCHIVED = RecordState.ARCHIVED
_ACK_TO_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


def acknowledge(state: InFlightState, config: ShareGroupConfig, now_ms: int, member_id: str,
                batches: Sequence[AcknowledgementBatch]) -> list[PersisterStateBatch]:
    """Apply a member's acknowledgements, all or none: raises ShareAcknowledgeError (INVALID_REQUEST or
    INVALID_RECORD_STATE, Kafka's codes and messages) and changes nothing when any batch is refused.
    Returns the state batches to persist. Offsets below the SPSO are already archived and are skipped.
    The request-level checks (`validate_acknowledgement_batches`) come first, in the handler, as in Kafka."""
    planned: list[tuple[int, int, AcknowledgeType]] = []  # runs of offsets with one acknowledge type
    for batch in batches:
        _plan_acknowledgement(state, member_id, batch, planned)
    if any(t is AcknowledgeType.RENEW for _f, _l, t in planned) and not config.renew_acknowledge_enable:
        raise ShareAcknowledgeError(
            INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group."
        )
    renewed_deadline_ms = now_ms + config.record_lock_duration_ms
    changed: list[tuple[int, int]] = []
    for first, last, ack_type in sorted(planned, key=lambda run: run[0]):
        if ack_type is AcknowledgeType.RENEW:
            _renew(state, first, last, renewed_deadline_ms)
            continue
        changed += state.transition(first, last, is_acquired, _ACK_TO_STATE[ack_type], config.delivery_count_limit)
    writes = state.persister_batches(changed)
    state.advance_start_offset()
    return writes


def _renew(state: InFlightState, first: int, last: int, deadline_ms: int) -> None:
    """The locks of the ACQUIRED offsets [first, last] run until `deadline_ms` now."""
    for batch in state.overlapping(first, last):
        lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
        if batch.states is None and batch.covers(lo, hi):
            batch.deadline_ms = deadline_ms
            continue
        batch.split()
        batch.deadlines[lo - batch.first_offset:hi - batch.first_offset + 1] = [deadline_ms] * (hi - lo + 1)
    state.deadlines_changed()


def _held_by(state: InFlightState, member_id: str, first: int, last: int) -> bool:
    """Every offset of [first, last] is ACQUIRED by `member_id`."""
    for batch in state.overlapping(first, last):
        lo, hi = max(first, batch.first_offset), min(last, batch.last_offset)
        if batch.states is None:
            if batch.state is not _ACQUIRED or batch.member_id != member_id:
                return False
            continue
        window = slice(lo - batch.first_offset, hi - batch.first_offset + 1)
        length = hi - lo + 1
        if batch.states[window].count(_ACQUIRED) != length or batch.members[window].count(member_id) != length:
            return False
    return True


def _plan_acknowledgement(
    state: InFlightState, member_id: str, batch: AcknowledgementBatch, planned: list[tuple[int, int, AcknowledgeType]]
) -> None:
    types = batch.acknowledge_types
    if batch.last_offset < batch.first_offset:
        raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledgement batch {batch}.")
    if not types or (len(types) > 1 and len(types) != batch.last_offset - batch.first_offset + 1):
        raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
    try:
        ack_types = [AcknowledgeType(t) for t in types]
    except ValueError:
        raise ShareAcknowledgeError(INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}") from None
    if batch.last_offset < state.start_offset:
        return
    if not state.batches or state.cache_after() <= state.start_offset:
        raise ShareAcknowledgeError(
            INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache."
        )
    last_cached = state.cache_after() - 1
    if batch.first_offset > last_cached:
        raise ShareAcknowledgeError(
            INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records."
        )
    if batch.last_offset > last_cached:
        raise ShareAcknowledgeError(
            INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records."
        )
    first = max(batch.first_offset, state.start_offset)
    if not _held_by(state, member_id, first, batch.last_offset) \
            or any(f <= batch.last_offset and first <= e for f, e, _t in planned):
        _refuse_acknowledgement(state, member_id, first, batch.last_offset, planned)
    if len(ack_types) == 1:
        planned.append((first, batch.last_offset, ack_types[0]))
        return
    for offset in range(first, batch.last_offset + 1):
        ack_type = ack_types[offset - batch.first_offset]
        if planned and planned[-1][1] == offset - 1 and planned[-1][2] is ack_type and planned[-1][0] >= first:
            planned[-1] = (planned[-1][0], offset, ack_type)
        else:
            planned.append((offset, offset, ack_type))


def _refuse_acknowledgement(
    state: InFlightState, member_id: str, first: int, last: int, planned: list[tuple[int, int, AcknowledgeType]]
) -> None:
    """Raise the error of the first offset in [first, last] that cannot be acknowledged, as Kafka checks them."""
    for offset in range(first, last + 1):
        offset_state, _count, member, _deadline_ms = state.offset_state(offset) or (_ARCHIVED, 0, NO_MEMBER, 0)
        if offset_state is not _ACQUIRED or any(f <= offset <= e for f, e, _t in planned):
            raise ShareAcknowledgeError(
                INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired."
            )
        if member != member_id:
            raise ShareAcknowledgeError(INVALID_RECORD_STATE, "Member is not the owner of offset")


def release_acquired_records(state: InFlightState, config: ShareGroupConfig,
                             member_id: str) -> list[PersisterStateBatch]:
    """The member closed its share session: its acquired records become AVAILABLE again (ARCHIVED if they reached
    the delivery count limit), their delivery counts unchanged."""
    if not state.batches:
        return []
    changed = state.transition(
        state.start_offset, state.end_offset,
        lambda offset_state, member, _deadline_ms: offset_state is _ACQUIRED and member == member_id,
        _AVAILABLE, config.delivery_count_limit)
    writes = state.persister_batches(changed)
    state.advance_start_offset()
    return writes


def expire_acquisition_locks(state: InFlightState, config: ShareGroupConfig, now_ms: int) -> list[PersisterStateBatch]:
    """Release every acquired record whose lock has run out by `now_ms`, as the member's RELEASE would."""
    deadline = state.next_lock_deadline_ms()
    if deadline is None or deadline > now_ms:
        return []
    changed = state.transition(
        state.start_offset, state.end_offset,
        lambda offset_state, _member, deadline_ms: offset_state is _ACQUIRED and deadline_ms <= now_ms,
        _AVAILABLE, config.delivery_count_limit)
    writes = state.persister_batches(changed)
    state.advance_start_offset()
    return writes
