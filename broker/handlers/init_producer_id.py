"""InitProducerId (key 22), v0-4: idempotent producers get a fresh producer id with epoch 0; a KIP-360
bump (v3+, known id and epoch) returns the same id with the next epoch. Transactional ids are refused with
UNSUPPORTED_VERSION until transactions exist (logged with the reason)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.context import BrokerContext
from protocol.api_keys import ApiKey
from protocol.connection import RequestReceived
from protocol.errors import ErrorCode
from protocol.messages import response_class

log = logging.getLogger(__name__)

MAX_EPOCH = 32_767


async def handle(ctx: BrokerContext, event: RequestReceived) -> Any:
    request = event.request
    cls = response_class(ApiKey.INIT_PRODUCER_ID, event.api_version)
    if request.transactional_id is not None:
        log.warning(
            "InitProducerId for transactional.id %r refused: transactions are not supported yet",
            request.transactional_id,
        )
        return cls(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, producer_id=-1, producer_epoch=-1)
    producer_id = getattr(request, "producer_id", -1) if event.api_version >= 3 else -1
    producer_epoch = getattr(request, "producer_epoch", -1) if event.api_version >= 3 else -1
    if producer_id >= 0 and 0 <= producer_epoch < MAX_EPOCH - 1:
        return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=producer_id,
                   producer_epoch=producer_epoch + 1)
    new_id = await asyncio.to_thread(ctx.producer_ids.next_producer_id)
    return cls(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=new_id, producer_epoch=0)
