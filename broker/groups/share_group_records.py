"""A share group's records in `__consumer_offsets`, in Apache Kafka 4.3.1's layouts (record types 10-15:
ShareGroupMemberMetadata, ShareGroupMetadata, ShareGroupTargetAssignmentMetadata, ShareGroupTargetAssignmentMember,
ShareGroupCurrentMemberAssignment, ShareGroupStatePartitionMetadata), and their replay into a `ShareGroup`.

`records_between(before, after)` turns what one heartbeat (or a session expiry) changed into the records Kafka
writes for it, in Kafka's order: subscriptions, then the group epoch, then the target assignment (members, then
its epoch), then current assignments; a member that left gets tombstones (current assignment, target member,
subscription). `state_partition_metadata_record` is the whole ShareGroupStatePartitionMetadata of a group (Kafka
rewrites it whole on every change), written by the coordinator around share-state initialisation and deletion.
`replay` applies one record; loading a group is replaying its records, and a group rebuilt that
way equals the live one. MetadataHash is written as 0: Kafka uses it only to notice topic changes on its own
coordinator, and minikafka compares the topics themselves. Pure functions over the groups they are given; not
thread-safe (the coordinator's loop owns the groups).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from minikafka.broker.groups.share_group import ShareGroup, ShareGroupMember, StatePartitionMetadata
from minikafka.protocol.coordinator_record_schema import CoordinatorRecordSchema

__all__ = [
    "SHARE_GROUP_RECORD_TYPES",
    "group_tombstones",
    "records_between",
    "replay",
    "snapshot",
    "state_partition_metadata_record",
]

MEMBER_METADATA = CoordinatorRecordSchema("ShareGroupMemberMetadata")
GROUP_METADATA = CoordinatorRecordSchema("ShareGroupMetadata")
TARGET_METADATA = CoordinatorRecordSchema("ShareGroupTargetAssignmentMetadata")
TARGET_MEMBER = CoordinatorRecordSchema("ShareGroupTargetAssignmentMember")
CURRENT_ASSIGNMENT = CoordinatorRecordSchema("ShareGroupCurrentMemberAssignment")
STATE_PARTITION_METADATA = CoordinatorRecordSchema("ShareGroupStatePartitionMetadata")
_SCHEMAS = {
    s.record_type: s
    for s in (MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT,
              STATE_PARTITION_METADATA)
}
SHARE_GROUP_RECORD_TYPES = frozenset(_SCHEMAS)
_MEMBER_STATE_STABLE = 0

Record = tuple[bytes, bytes | None]
Assignment = Mapping[uuid.UUID, frozenset[int]]


class ShareGroupView:
    """What `records_between` compares: a copy of a group's persisted state."""

    def __init__(self, group: ShareGroup) -> None:
        self.group_id = group.group_id
        self.group_epoch = group.group_epoch
        self.assignment_epoch = group.assignment_epoch
        self.members = dict(group.members)
        self.target_assignment = {m: dict(a) for m, a in group.target_assignment.items()}


def snapshot(group: ShareGroup) -> ShareGroupView:
    return ShareGroupView(group)


def _partitions(schema: CoordinatorRecordSchema, field: str, assignment: Assignment) -> list[Any]:
    data_class = schema.value_class.fields[field].data_class
    return [data_class(topic_id=t, partitions=sorted(p)) for t, p in sorted(assignment.items()) if p]


def records_between(before: ShareGroupView | None, after: ShareGroup) -> list[Record]:
    """The records that take `before` (None: a new group) to `after`."""
    group_id = after.group_id
    old_members: Mapping[str, ShareGroupMember] = before.members if before else {}
    old_target: Mapping[str, Assignment] = before.target_assignment if before else {}
    records: list[Record] = []
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or (old.rack_id, old.client_id, old.client_host, old.subscribed_topic_names) != (
            member.rack_id,
            member.client_id,
            member.client_host,
            member.subscribed_topic_names,
        ):
            records.append(
                (
                    MEMBER_METADATA.encode_key(group_id=group_id, member_id=member_id),
                    MEMBER_METADATA.encode_value(
                        rack_id=member.rack_id,
                        client_id=member.client_id,
                        client_host=member.client_host,
                        subscribed_topic_names=sorted(member.subscribed_topic_names),
                    ),
                )
            )
    if before is None or before.group_epoch != after.group_epoch:
        records.append(
            (
                GROUP_METADATA.encode_key(group_id=group_id),
                GROUP_METADATA.encode_value(epoch=after.group_epoch, metadata_hash=0),
            )
        )
    for member_id, assignment in after.target_assignment.items():
        if dict(old_target.get(member_id, {})) != dict(assignment) or member_id not in old_target:
            records.append(
                (
                    TARGET_MEMBER.encode_key(group_id=group_id, member_id=member_id),
                    TARGET_MEMBER.encode_value(
                        topic_partitions=_partitions(TARGET_MEMBER, "topic_partitions", assignment)
                    ),
                )
            )
    if before is None or before.assignment_epoch != after.assignment_epoch:
        records.append(
            (
                TARGET_METADATA.encode_key(group_id=group_id),
                TARGET_METADATA.encode_value(assignment_epoch=after.assignment_epoch),
            )
        )
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or (old.member_epoch, old.previous_member_epoch, dict(old.assignment)) != (
            member.member_epoch,
            member.previous_member_epoch,
            dict(member.assignment),
        ):
            records.append(
                (
                    CURRENT_ASSIGNMENT.encode_key(group_id=group_id, member_id=member_id),
                    CURRENT_ASSIGNMENT.encode_value(
                        member_epoch=member.member_epoch,
                        previous_member_epoch=member.previous_member_epoch,
                        state=_MEMBER_STATE_STABLE,
                        assigned_partitions=_partitions(CURRENT_ASSIGNMENT, "assigned_partitions", member.assignment),
                    ),
                )
            )
    for member_id in old_members:
        if member_id not in after.members:
            records.append((CURRENT_ASSIGNMENT.encode_key(group_id=group_id, member_id=member_id), None))
            records.append((TARGET_MEMBER.encode_key(group_id=group_id, member_id=member_id), None))
            records.append((MEMBER_METADATA.encode_key(group_id=group_id, member_id=member_id), None))
    return records


def state_partition_metadata_record(group_id: str, metadata: StatePartitionMetadata) -> Record:
    """Kafka's newShareGroupStatePartitionMetadataRecord (topics in id order, partitions ascending)."""
    fields = STATE_PARTITION_METADATA.value_class.fields
    partitions_info = fields["initializing_topics"].data_class
    topic_info = fields["deleting_topics"].data_class

    def with_partitions(topics: Mapping[uuid.UUID, tuple[str, frozenset[int]]]) -> list[Any]:
        return [partitions_info(topic_id=topic_id, topic_name=name, partitions=sorted(partitions))
                for topic_id, (name, partitions) in sorted(topics.items())]

    return (
        STATE_PARTITION_METADATA.encode_key(group_id=group_id),
        STATE_PARTITION_METADATA.encode_value(
            initializing_topics=with_partitions(metadata.initializing),
            initialized_topics=with_partitions(metadata.initialized),
            deleting_topics=[topic_info(topic_id=topic_id, topic_name=name)
                             for topic_id, name in sorted(metadata.deleting.items())],
        ),
    )


def group_tombstones(group: ShareGroup) -> list[Record]:
    """Kafka's ShareGroup.createGroupTombstoneRecords, in its order: each member's current assignment, target
    assignment, the target assignment metadata, each member's subscription, the state-partition metadata, the
    group epoch."""
    group_id = group.group_id
    records: list[Record] = [(CURRENT_ASSIGNMENT.encode_key(group_id=group_id, member_id=m), None)
                             for m in group.members]
    records += [(TARGET_MEMBER.encode_key(group_id=group_id, member_id=m), None) for m in group.members]
    records.append((TARGET_METADATA.encode_key(group_id=group_id), None))
    records += [(MEMBER_METADATA.encode_key(group_id=group_id, member_id=m), None) for m in group.members]
    records.append((STATE_PARTITION_METADATA.encode_key(group_id=group_id), None))
    records.append((GROUP_METADATA.encode_key(group_id=group_id), None))
    return records


def _state_partition_metadata(data: Any) -> StatePartitionMetadata:
    def with_partitions(topics: Any) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        return {t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in topics}

    return StatePartitionMetadata(
        initializing=with_partitions(data.initializing_topics),
        initialized=with_partitions(data.initialized_topics),
        deleting={t.topic_id: t.topic_name for t in data.deleting_topics},
    )


def replay(groups: dict[str, ShareGroup], key: bytes, value: bytes | None) -> None:
    """Apply one share-group record of `__consumer_offsets` to `groups` (created on their first record). Once
    loading is done, call each group's `on_loaded`. Raises ValueError for a record that is not a share-group record
    or is malformed."""
    if len(key) < 2:
        raise ValueError("short __consumer_offsets key")
    schema = _SCHEMAS.get(int.from_bytes(key[:2], "big", signed=True))
    if schema is None:
        raise ValueError("not a share-group record")
    fields = schema.decode_key(key)
    data = None if value is None else schema.decode_value(value)
    group = groups.get(fields.group_id)
    if schema is STATE_PARTITION_METADATA:
        if data is not None:
            if group is None:
                group = groups[fields.group_id] = ShareGroup(fields.group_id)
            group.state_partitions = _state_partition_metadata(data)
        elif group is not None:  # a tombstone of a group already gone is ignored, as Kafka does
            group.state_partitions = None
        return
    if group is None:
        group = groups[fields.group_id] = ShareGroup(fields.group_id)
    if schema is GROUP_METADATA:
        if data is None:
            del groups[fields.group_id]
        else:
            group.group_epoch = data.epoch
        return
    if schema is TARGET_METADATA:
        group.assignment_epoch = 0 if data is None else data.assignment_epoch
        return
    member_id = fields.member_id
    if schema is TARGET_MEMBER:
        if data is None:
            group.target_assignment.pop(member_id, None)
        else:
            group.target_assignment[member_id] = {t.topic_id: frozenset(t.partitions) for t in data.topic_partitions}
        return
    if data is None:
        if schema is MEMBER_METADATA:
            group.members.pop(member_id, None)
        elif member_id in group.members:
            group.members[member_id] = replace(
                group.members[member_id], member_epoch=0, previous_member_epoch=0, assignment={}
            )
        return
    member = group.members.get(member_id, ShareGroupMember(member_id))
    if schema is MEMBER_METADATA:
        member = replace(
            member,
            rack_id=data.rack_id,
            client_id=data.client_id,
            client_host=data.client_host,
            subscribed_topic_names=tuple(sorted(data.subscribed_topic_names)),
        )
    else:
        member = replace(
            member,
            member_epoch=data.member_epoch,
            previous_member_epoch=data.previous_member_epoch,
            assignment={t.topic_id: frozenset(t.partitions) for t in data.assigned_partitions},
        )
    group.members[member_id] = member
