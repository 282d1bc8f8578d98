"""DescribeUserScramCredentials (key 50), v0: each requested user's SCRAM mechanisms and iteration counts
(never the salt or keys), or every user with a credential when the list is null or empty; an unknown user
gets RESOURCE_NOT_FOUND and a user named twice DUPLICATE_RESOURCE, with Kafka's messages
(`ScramCredentialStore.describe`).
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.context import BrokerContext
from minikafka.broker.security.authorize import AclOperation, authorize_cluster
from minikafka.broker.session import Session
from minikafka.protocol.api_keys import ApiKey
from minikafka.protocol.connection import RequestReceived
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import response_class


async def handle(ctx: BrokerContext, event: RequestReceived, session: Session) -> Any:
    cls = response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, event.api_version)
    users = None if event.request.users is None else [user.name for user in event.request.users]
    if not authorize_cluster(ctx, session, AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        message = "Cluster authorization failed."
        return cls(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message,
                   results=[cls.DescribeUserScramCredentialsResult(
                       # Kafka's getErrorResponse: one result per requested user, the name left empty
                       user="", error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message,
                       credential_infos=[]) for _user in users or ()])
    results = ctx.scram_credentials.describe(users)
    return cls(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        results=[
            cls.DescribeUserScramCredentialsResult(
                user=result.user,
                error_code=result.error_code,
                error_message=result.error_message,
                credential_infos=[
                    cls.DescribeUserScramCredentialsResult.CredentialInfo(mechanism=mechanism, iterations=iterations)
                    for mechanism, iterations in result.credential_infos
                ],
            )
            for result in results
        ],
    )
