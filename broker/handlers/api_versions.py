"""ApiVersions (key 18): advertise exactly `SUPPORTED_VERSIONS`; too-new versions get a v0 error body. From
v3 the supported and finalized features (`BrokerFeatures`: `transaction.version` tells Kafka 4 producers
whether to use KIP-890 part 2)."""

from __future__ import annotations

import re
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.features import BrokerFeatures
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class

# KIP-511: alphanumerics, with '.' and '-' allowed inside.
_SOFTWARE_FIELD = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


async def handle(ctx: BrokerContext, event: RequestReceived, _session: Session) -> Any:
    if event.unsupported_version:
        # The client parses this as v0, then retries with our maximum (kafka-protocol-notes §3.2).
        low, high = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
        cls = response_class(ApiKey.API_VERSIONS, 0)
        return cls(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=[cls.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=low, max_version=high)],
        )
    cls = response_class(ApiKey.API_VERSIONS, event.api_version)
    error_code = ErrorCode.NONE
    if event.api_version >= 3:
        request = event.request
        for value in (request.client_software_name, request.client_software_version):
            if not _SOFTWARE_FIELD.match(value or ""):
                error_code = ErrorCode.INVALID_REQUEST
    features = BrokerFeatures.for_transaction_version(ctx.config.transactions.transaction_version)
    return cls(
        error_code=error_code,
        api_keys=[
            cls.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())
        ],
        throttle_time_ms=0,
        supported_features=[
            cls.SupportedFeatureKey(name=name, min_version=low, max_version=high)
            for name, (low, high) in features.supported_for(event.api_version).items()
        ],
        finalized_features_epoch=features.epoch,
        finalized_features=[
            cls.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
            for name, level in features.finalized.items()
        ],
        zk_migration_ready=False,
    )
