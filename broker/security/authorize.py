"""The handlers' view of authorization: Kafka's `AuthHelper` over `BrokerContext.authorizer`.

With no authorizer configured (`ctx.authorizer is None`) every check passes, so handlers call these
unconditionally. Resources are literal names; the CLUSTER resource is `kafka-cluster`. Event-loop thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from minikafka.broker.security.acls import CLUSTER_NAME, AclOperation, Action, ResourceType
from minikafka.broker.session import Session

if TYPE_CHECKING:
    from minikafka.broker.context import BrokerContext
    from minikafka.broker.security.authorizer import StandardAuthorizer

__all__ = [
    "AclOperation",
    "ResourceType",
    "authorize",
    "authorize_actions",
    "authorize_by_resource_type",
    "authorize_cluster",
    "authorized_names",
    "authorized_operations",
    "supported_authorized_operations",
    "to_32_bit_field",
]

_O = AclOperation
# Kafka's AclEntry.supportedOperations: what KIP-430's authorized-operations fields report on, per resource type.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
}


def _authorizer(ctx: BrokerContext) -> StandardAuthorizer | None:
    # getattr: handler tests build partial contexts (SimpleNamespace) without the field; that means "no authorizer".
    authorizer: StandardAuthorizer | None = getattr(ctx, "authorizer", None)
    return authorizer


def authorize_actions(ctx: BrokerContext, session: Session, actions: Sequence[Action]) -> list[bool]:
    """One answer per (operation, resource) action, True = allowed."""
    authorizer = _authorizer(ctx)
    if authorizer is None:
        return [True] * len(actions)
    return authorizer.authorize(session, actions)


def authorize(ctx: BrokerContext, session: Session, operation: AclOperation, resource_type: ResourceType,
              name: str) -> bool:
    return authorize_actions(ctx, session, [Action(operation, resource_type, name)])[0]


def authorize_cluster(ctx: BrokerContext, session: Session, operation: AclOperation) -> bool:
    return authorize(ctx, session, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def authorized_names(ctx: BrokerContext, session: Session, operation: AclOperation, resource_type: ResourceType,
                     names: Iterable[str]) -> set[str]:
    """Kafka's filterByAuthorized: the subset of `names` (each asked once) the session may operate on."""
    if _authorizer(ctx) is None:  # every request's path (Produce, Fetch): skip building the actions
        return set(names)
    unique = list(dict.fromkeys(names))
    answers = authorize_actions(ctx, session, [Action(operation, resource_type, name) for name in unique])
    return {name for name, allowed in zip(unique, answers, strict=True) if allowed}


def authorize_by_resource_type(ctx: BrokerContext, session: Session, operation: AclOperation,
                               resource_type: ResourceType) -> bool:
    """KIP-679: may the session `operation` on some resource of the type (e.g. WRITE on any topic)."""
    authorizer = _authorizer(ctx)
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(session, operation, resource_type)


def authorized_operations(ctx: BrokerContext, session: Session, resource_type: ResourceType, name: str,
                          operations: Iterable[int]) -> set[int]:
    """Kafka's AuthHelper.authorizedOperations (KIP-430): the codes of `operations` allowed on the resource."""
    codes = list(operations)
    answers = authorize_actions(ctx, session, [Action(AclOperation(code), resource_type, name) for code in codes])
    return {code for code, allowed in zip(codes, answers, strict=True) if allowed}


def supported_authorized_operations(ctx: BrokerContext, session: Session, resource_type: ResourceType,
                                    name: str) -> set[int]:
    """KIP-430's field value as a set of operation codes: those of Kafka's supported operations for the resource
    type that the session may perform on the literal resource (all of them without an authorizer)."""
    return authorized_operations(ctx, session, resource_type, name,
                                 (int(operation) for operation in SUPPORTED_OPERATIONS[resource_type]))


def to_32_bit_field(operations: set[int] | None) -> int:
    """Kafka's Utils.to32BitField for the int32 fields kafka-python leaves as plain ints; None = INT_MIN, the
    schemas' "not requested"."""
    if operations is None:
        return -2147483648
    return sum(1 << code for code in operations)
