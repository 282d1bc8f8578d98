"""DeleteGroups (key 42), v0-2: only Empty groups (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for
unknown ones); their offsets and metadata are tombstoned in `__consumer_offsets`."""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    names = list(event.request.groups_names)
    results = ctx.group_coordinator.offsets.handle_delete_groups(names)
    cls = response_class(ApiKey.DELETE_GROUPS, event.api_version)
    return cls(
        throttle_time_ms=0,
        results=[cls.DeletableGroupResult(group_id=name, error_code=results[name]) for name in names],
    )
