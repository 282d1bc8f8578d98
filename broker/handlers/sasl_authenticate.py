"""SaslAuthenticate (key 36) reaching the dispatcher: on a PLAINTEXT or SSL listener, or after the connection
authenticated. Kafka's KafkaApis answers ILLEGAL_SASL_STATE "SaslAuthenticate request received after
successful authentication" (the same text on a listener without SASL); the exchange itself is
`broker.security.sasl_authenticator`'s.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.SASL_AUTHENTICATE, event.api_version)
    fields: dict[str, Any] = {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "error_message": AFTER_AUTHENTICATION,
                              "auth_bytes": b""}
    if event.api_version >= 1:
        fields["session_lifetime_ms"] = 0
    return cls(**fields)
