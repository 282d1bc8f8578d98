"""Kafka error codes and one exception class per code.

`ErrorCode` is the single table of wire error codes (names as in Apache Kafka's `Errors` enum).
Every layer raises a `KafkaError` subclass; handlers turn it into the code at the narrowest scope
(partition -> topic -> request). `ProtocolError` is different: it means the peer sent bytes that
cannot be decoded, and the only answer is to close that connection.

Generated once from the Apache Kafka error table; edit by hand from now on.
"""

from __future__ import annotations

from minikafka.protocol.error_codes import ErrorCode

ERROR_CLASSES: dict[ErrorCode, type[KafkaError]] = {}


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid Kafka request; close the connection."""


class KafkaError(Exception):
    """Base of the errors that map to a wire error code."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: bool = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        ERROR_CLASSES[cls.error_code] = cls

    def __init__(self, message: str = "", record_errors: tuple[tuple[int, str], ...] = ()) -> None:
        super().__init__(message or self.error_code.name)
        self.message = message
        #: Produce v8+ per-record errors: (batch_index, message) pairs.
        self.record_errors = record_errors


class UnknownServerError(KafkaError):
    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(KafkaError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptMessageError(KafkaError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(KafkaError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    retriable = True


class InvalidFetchSizeError(KafkaError):
    error_code = ErrorCode.INVALID_FETCH_SIZE


class LeaderNotAvailableError(KafkaError):
    error_code = ErrorCode.LEADER_NOT_AVAILABLE
    retriable = True


class NotLeaderOrFollowerError(KafkaError):
    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    retriable = True


class RequestTimedOutError(KafkaError):
    error_code = ErrorCode.REQUEST_TIMED_OUT
    retriable = True


class BrokerNotAvailableError(KafkaError):
    error_code = ErrorCode.BROKER_NOT_AVAILABLE


class ReplicaNotAvailableError(KafkaError):
    error_code = ErrorCode.REPLICA_NOT_AVAILABLE
    retriable = True


class MessageTooLargeError(KafkaError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class StaleControllerEpochError(KafkaError):
    error_code = ErrorCode.STALE_CONTROLLER_EPOCH


class OffsetMetadataTooLargeError(KafkaError):
    error_code = ErrorCode.OFFSET_METADATA_TOO_LARGE


class NetworkExceptionError(KafkaError):
    error_code = ErrorCode.NETWORK_EXCEPTION
    retriable = True


class CoordinatorLoadInProgressError(KafkaError):
    error_code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    retriable = True


class CoordinatorNotAvailableError(KafkaError):
    error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    retriable = True


class NotCoordinatorError(KafkaError):
    error_code = ErrorCode.NOT_COORDINATOR
    retriable = True


class InvalidTopicExceptionError(KafkaError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class RecordListTooLargeError(KafkaError):
    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(KafkaError):
    error_code = ErrorCode.NOT_ENOUGH_REPLICAS
    retriable = True


class NotEnoughReplicasAfterAppendError(KafkaError):
    error_code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    retriable = True


class InvalidRequiredAcksError(KafkaError):
    error_code = ErrorCode.INVALID_REQUIRED_ACKS


class IllegalGenerationError(KafkaError):
    error_code = ErrorCode.ILLEGAL_GENERATION


class InconsistentGroupProtocolError(KafkaError):
    error_code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL


class InvalidGroupIdError(KafkaError):
    error_code = ErrorCode.INVALID_GROUP_ID


class UnknownMemberIdError(KafkaError):
    error_code = ErrorCode.UNKNOWN_MEMBER_ID


class InvalidSessionTimeoutError(KafkaError):
    error_code = ErrorCode.INVALID_SESSION_TIMEOUT


class RebalanceInProgressError(KafkaError):
    error_code = ErrorCode.REBALANCE_IN_PROGRESS


class InvalidCommitOffsetSizeError(KafkaError):
    error_code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE


class TopicAuthorizationFailedError(KafkaError):
    error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailedError(KafkaError):
    error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationFailedError(KafkaError):
    error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class InvalidTimestampError(KafkaError):
    error_code = ErrorCode.INVALID_TIMESTAMP


class UnsupportedSaslMechanismError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(KafkaError):
    error_code = ErrorCode.ILLEGAL_SASL_STATE


class UnsupportedVersionError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_VERSION


class TopicAlreadyExistsError(KafkaError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class InvalidConfigError(KafkaError):
    """A config value broke a rule; the message names the key, the value and the rule."""

    error_code = ErrorCode.INVALID_CONFIG


class NotControllerError(KafkaError):
    error_code = ErrorCode.NOT_CONTROLLER
    retriable = True


class InvalidRequestError(KafkaError):
    error_code = ErrorCode.INVALID_REQUEST


class UnsupportedForMessageFormatError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class PolicyViolationError(KafkaError):
    error_code = ErrorCode.POLICY_VIOLATION


class OutOfOrderSequenceNumberError(KafkaError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceNumberError(KafkaError):
    error_code = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    error_code = ErrorCode.INVALID_TXN_STATE


class InvalidProducerIdMappingError(KafkaError):
    error_code = ErrorCode.INVALID_PRODUCER_ID_MAPPING


class InvalidTransactionTimeoutError(KafkaError):
    error_code = ErrorCode.INVALID_TRANSACTION_TIMEOUT


class ConcurrentTransactionsError(KafkaError):
    error_code = ErrorCode.CONCURRENT_TRANSACTIONS
    retriable = True


class TransactionCoordinatorFencedError(KafkaError):
    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class TransactionalIdAuthorizationFailedError(KafkaError):
    error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class SecurityDisabledError(KafkaError):
    error_code = ErrorCode.SECURITY_DISABLED


class OperationNotAttemptedError(KafkaError):
    error_code = ErrorCode.OPERATION_NOT_ATTEMPTED


class KafkaStorageError(KafkaError):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR
    retriable = True


class LogDirNotFoundError(KafkaError):
    error_code = ErrorCode.LOG_DIR_NOT_FOUND


class SaslAuthenticationFailedError(KafkaError):
    error_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class UnknownProducerIdError(KafkaError):
    error_code = ErrorCode.UNKNOWN_PRODUCER_ID


class ReassignmentInProgressError(KafkaError):
    error_code = ErrorCode.REASSIGNMENT_IN_PROGRESS


class DelegationTokenAuthDisabledError(KafkaError):
    error_code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


class DelegationTokenNotFoundError(KafkaError):
    error_code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND


class DelegationTokenOwnerMismatchError(KafkaError):
    error_code = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH


class DelegationTokenRequestNotAllowedError(KafkaError):
    error_code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


class DelegationTokenAuthorizationFailedError(KafkaError):
    error_code = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED


class DelegationTokenExpiredError(KafkaError):
    error_code = ErrorCode.DELEGATION_TOKEN_EXPIRED


class InvalidPrincipalTypeError(KafkaError):
    error_code = ErrorCode.INVALID_PRINCIPAL_TYPE


class NonEmptyGroupError(KafkaError):
    error_code = ErrorCode.NON_EMPTY_GROUP


class GroupIdNotFoundError(KafkaError):
    error_code = ErrorCode.GROUP_ID_NOT_FOUND


class FetchSessionIdNotFoundError(KafkaError):
    error_code = ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    retriable = True


class InvalidFetchSessionEpochError(KafkaError):
    error_code = ErrorCode.INVALID_FETCH_SESSION_EPOCH
    retriable = True


class ListenerNotFoundError(KafkaError):
    error_code = ErrorCode.LISTENER_NOT_FOUND
    retriable = True


class TopicDeletionDisabledError(KafkaError):
    error_code = ErrorCode.TOPIC_DELETION_DISABLED


class FencedLeaderEpochError(KafkaError):
    error_code = ErrorCode.FENCED_LEADER_EPOCH
    retriable = True


class UnknownLeaderEpochError(KafkaError):
    error_code = ErrorCode.UNKNOWN_LEADER_EPOCH
    retriable = True


class UnsupportedCompressionTypeError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class StaleBrokerEpochError(KafkaError):
    error_code = ErrorCode.STALE_BROKER_EPOCH


class OffsetNotAvailableError(KafkaError):
    error_code = ErrorCode.OFFSET_NOT_AVAILABLE
    retriable = True


class MemberIdRequiredError(KafkaError):
    error_code = ErrorCode.MEMBER_ID_REQUIRED


class PreferredLeaderNotAvailableError(KafkaError):
    error_code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    retriable = True


class GroupMaxSizeReachedError(KafkaError):
    error_code = ErrorCode.GROUP_MAX_SIZE_REACHED


class FencedInstanceIdError(KafkaError):
    error_code = ErrorCode.FENCED_INSTANCE_ID


class EligibleLeadersNotAvailableError(KafkaError):
    error_code = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    retriable = True


class ElectionNotNeededError(KafkaError):
    error_code = ErrorCode.ELECTION_NOT_NEEDED
    retriable = True


class NoReassignmentInProgressError(KafkaError):
    error_code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


class GroupSubscribedToTopicError(KafkaError):
    error_code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


class InvalidRecordError(KafkaError):
    error_code = ErrorCode.INVALID_RECORD


class UnstableOffsetCommitError(KafkaError):
    error_code = ErrorCode.UNSTABLE_OFFSET_COMMIT
    retriable = True


class ThrottlingQuotaExceededError(KafkaError):
    error_code = ErrorCode.THROTTLING_QUOTA_EXCEEDED
    retriable = True


class ProducerFencedError(KafkaError):
    error_code = ErrorCode.PRODUCER_FENCED


class ResourceNotFoundError(KafkaError):
    error_code = ErrorCode.RESOURCE_NOT_FOUND


class DuplicateResourceError(KafkaError):
    error_code = ErrorCode.DUPLICATE_RESOURCE


class UnacceptableCredentialError(KafkaError):
    error_code = ErrorCode.UNACCEPTABLE_CREDENTIAL


class InconsistentVoterSetError(KafkaError):
    error_code = ErrorCode.INCONSISTENT_VOTER_SET


class InvalidUpdateVersionError(KafkaError):
    error_code = ErrorCode.INVALID_UPDATE_VERSION


class FeatureUpdateFailedError(KafkaError):
    error_code = ErrorCode.FEATURE_UPDATE_FAILED


class PrincipalDeserializationFailureError(KafkaError):
    error_code = ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


class SnapshotNotFoundError(KafkaError):
    error_code = ErrorCode.SNAPSHOT_NOT_FOUND


class PositionOutOfRangeError(KafkaError):
    error_code = ErrorCode.POSITION_OUT_OF_RANGE


class UnknownTopicIdError(KafkaError):
    error_code = ErrorCode.UNKNOWN_TOPIC_ID
    retriable = True


class DuplicateBrokerRegistrationError(KafkaError):
    error_code = ErrorCode.DUPLICATE_BROKER_REGISTRATION


class BrokerIdNotRegisteredError(KafkaError):
    error_code = ErrorCode.BROKER_ID_NOT_REGISTERED


class InconsistentTopicIdError(KafkaError):
    error_code = ErrorCode.INCONSISTENT_TOPIC_ID
    retriable = True


class InconsistentClusterIdError(KafkaError):
    error_code = ErrorCode.INCONSISTENT_CLUSTER_ID


class TransactionalIdNotFoundError(KafkaError):
    error_code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


class FetchSessionTopicIdError(KafkaError):
    error_code = ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    retriable = True


class IneligibleReplicaError(KafkaError):
    error_code = ErrorCode.INELIGIBLE_REPLICA


class NewLeaderElectedError(KafkaError):
    error_code = ErrorCode.NEW_LEADER_ELECTED


class OffsetMovedToTieredStorageError(KafkaError):
    error_code = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE


class FencedMemberEpochError(KafkaError):
    error_code = ErrorCode.FENCED_MEMBER_EPOCH


class UnreleasedInstanceIdError(KafkaError):
    error_code = ErrorCode.UNRELEASED_INSTANCE_ID


class UnsupportedAssignorError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_ASSIGNOR


class StaleMemberEpochError(KafkaError):
    error_code = ErrorCode.STALE_MEMBER_EPOCH


class MismatchedEndpointTypeError(KafkaError):
    error_code = ErrorCode.MISMATCHED_ENDPOINT_TYPE


class UnsupportedEndpointTypeError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


class UnknownControllerIdError(KafkaError):
    error_code = ErrorCode.UNKNOWN_CONTROLLER_ID


class UnknownSubscriptionIdError(KafkaError):
    error_code = ErrorCode.UNKNOWN_SUBSCRIPTION_ID


class TelemetryTooLargeError(KafkaError):
    error_code = ErrorCode.TELEMETRY_TOO_LARGE


class InvalidRegistrationError(KafkaError):
    error_code = ErrorCode.INVALID_REGISTRATION


class TransactionAbortableError(KafkaError):
    error_code = ErrorCode.TRANSACTION_ABORTABLE


class InvalidRecordStateError(KafkaError):
    error_code = ErrorCode.INVALID_RECORD_STATE


class ShareSessionNotFoundError(KafkaError):
    error_code = ErrorCode.SHARE_SESSION_NOT_FOUND
    retriable = True


class InvalidShareSessionEpochError(KafkaError):
    error_code = ErrorCode.INVALID_SHARE_SESSION_EPOCH
    retriable = True


class FencedStateEpochError(KafkaError):
    error_code = ErrorCode.FENCED_STATE_EPOCH


class InvalidVoterKeyError(KafkaError):
    error_code = ErrorCode.INVALID_VOTER_KEY


class DuplicateVoterError(KafkaError):
    error_code = ErrorCode.DUPLICATE_VOTER


class VoterNotFoundError(KafkaError):
    error_code = ErrorCode.VOTER_NOT_FOUND


def error_for_code(code: int, message: str = "") -> KafkaError:
    """Return an exception instance for a wire error code."""
    return ERROR_CLASSES[ErrorCode(code)](message)
