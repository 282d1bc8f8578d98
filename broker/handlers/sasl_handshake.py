"""SaslHandshake (key 17) reaching the dispatcher: on a PLAINTEXT or SSL listener, or on a SASL connection that
has already authenticated and is not re-authenticating (KIP-368 is off, or it is within a second of the last
re-authentication). Kafka's KafkaApis answers ILLEGAL_SASL_STATE with no mechanisms; the exchange itself is
`broker.security.sasl_authenticator`'s, which the network layer calls before the dispatcher.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    return response_class(ApiKey.SASL_HANDSHAKE, event.api_version)(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
