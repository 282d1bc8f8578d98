"""ListGroups (key 16), v0-5: every live classic, consumer (KIP-848) and share (KIP-932) group; v4 filters by
state, v5 by type (a share group is listed with protocol type "share" and type "share", as Kafka 4.3 lists it)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import GROUP, elsewhere
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorize_cluster, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    version = event.api_version
    states = request.states_filter if version >= 4 else ()
    types = request.types_filter if version >= 5 else ()
    error, groups = ctx.group_coordinator.admin.handle_list_groups(states or (), types or ())
    share = ctx.share_coordinator
    if share is not None and not error:
        state_filter = {state.lower() for state in states or ()}
        type_filter = {kind.lower() for kind in types or ()}
        if not type_filter or "share" in type_filter:
            groups = groups + [
                (group_id, "share", group.state.value, "share") for group_id, group in share.groups.items()
                if not state_filter or group.state.value.lower() in state_filter]
    # each broker lists the groups of the __consumer_offsets partitions it leads, as Kafka's coordinators do
    groups = [group for group in groups if not elsewhere(ctx.coordinators, ctx.node_id, GROUP, group[0])]
    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE):  # else only the groups it may describe
        describable = authorized_names(ctx, session, AclOperation.DESCRIBE, ResourceType.GROUP,
                                       (group[0] for group in groups))
        groups = [group for group in groups if group[0] in describable]
    cls = response_class(ApiKey.LIST_GROUPS, version)
    return cls(
        throttle_time_ms=0,
        error_code=error,
        groups=[
            cls.ListedGroup(group_id=group_id, protocol_type=protocol_type, group_state=state, group_type=group_type)
            for group_id, protocol_type, state, group_type in groups
        ],
    )
