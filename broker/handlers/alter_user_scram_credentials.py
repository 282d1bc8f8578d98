"""AlterUserScramCredentials (key 51), v0: deletions and upsertions of users' SCRAM credentials. The client
salts and hashes the password itself (`kafka-configs --add-config 'SCRAM-SHA-256=[password=...]'` sends salt,
iterations and SaltedPassword); the broker keeps only StoredKey and ServerKey derived from it. Kafka's rules
and error codes (`ScramCredentialStore.alter`): one alteration per user and request (DUPLICATE_RESOURCE), an
unknown mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL, deleting
a missing credential RESOURCE_NOT_FOUND. The store's file is written (fsync) in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.security.scram_credentials import ScramCredentialDeletion, ScramCredentialUpsertion
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    request = event.request
    cls = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, event.api_version)
    if not authorize_cluster(ctx, session, AclOperation.ALTER):  # Kafka: ALTER on the cluster, every user refused
        users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
        return cls(throttle_time_ms=0, results=[cls.AlterUserScramCredentialsResult(
            user=user, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
            for user in users])
    deletions = [ScramCredentialDeletion(d.name, d.mechanism) for d in request.deletions]
    upsertions = [ScramCredentialUpsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
                  for u in request.upsertions]
    results = await asyncio.to_thread(ctx.scram_credentials.alter, deletions, upsertions)
    return cls(
        throttle_time_ms=0,
        results=[cls.AlterUserScramCredentialsResult(user=r.user, error_code=r.error_code,
                                                     error_message=r.error_message) for r in results],
    )
