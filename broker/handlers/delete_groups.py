"""DeleteGroups (key 42), v0-2: only Empty groups (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for
unknown ones); their offsets and metadata are tombstoned in `__consumer_offsets`. A share group's records are
tombstoned too, and its share partitions' state in `__share_group_state`."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.coordinator_routing import GROUP, elsewhere
from minikafka.broker.security.authorize import AclOperation, ResourceType, authorized_names
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    names = list(event.request.groups_names)
    deletable = authorized_names(ctx, session, AclOperation.DELETE, ResourceType.GROUP, names)
    elsewhere_names = {name for name in names if name in deletable and
                       elsewhere(ctx.coordinators, ctx.node_id, GROUP, name)}
    deletable = {name for name in deletable if name not in elsewhere_names}
    share = ctx.share_coordinator
    share_names = {name for name in names if share is not None and name in share.groups and name in deletable}
    results = ctx.group_coordinator.admin.handle_delete_groups(
        [name for name in names if name in deletable and name not in share_names])
    if share is not None:
        results.update({name: share.delete_group(name) for name in share_names})
    results.update({name: ErrorCode.GROUP_AUTHORIZATION_FAILED for name in names if name not in deletable})
    results.update({name: ErrorCode.NOT_COORDINATOR for name in elsewhere_names})
    cls = response_class(ApiKey.DELETE_GROUPS, event.api_version)
    return cls(
        throttle_time_ms=0,
        results=[cls.DeletableGroupResult(group_id=name, error_code=results[name]) for name in names],
    )
