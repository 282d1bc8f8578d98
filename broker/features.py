"""`BrokerFeatures`: the feature flags this broker advertises in ApiVersions (v3+), as a Kafka 4 KRaft node does.

Only features whose behaviour minikafka implements are listed: `metadata.version` (supported 3.3-IV3 = 7, the
KRaft minimum, to 4.0-IV3 = 25, the release whose transaction protocol is served; finalized at 25) and
`transaction.version` (supported 0-2, finalized at `minikafka.transaction.version`). Kafka 4.3 also lists
`group.version`, `kraft.version`, `share.version`, `streams.version` and `eligible.leader.replicas.version`
(the KIP-848 consumer protocol, KRaft voters, share groups, KIP-1071 streams groups, ELR); they are left out
until the behaviour they gate is served here (a client treats a missing feature as level 0). As Kafka:
a finalized level of 0 is not listed, and v3 responses omit supported features whose minimum is 0 (KIP-1022:
older clients refuse such ranges). The finalized epoch is a constant, since the levels are fixed for the
life of a broker process. Immutable; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.broker.transactions.transaction_version import FEATURE_NAME as TRANSACTION_VERSION
from minikafka.broker.transactions.transaction_version import MAX_TRANSACTION_VERSION

METADATA_VERSION = "metadata.version"
METADATA_VERSION_MIN_LEVEL = 7  # IBP_3_3_IV3, MetadataVersion.MINIMUM_VERSION
METADATA_VERSION_LEVEL = 25  # IBP_4_0_IV3
FINALIZED_FEATURES_EPOCH = 1


@dataclass(frozen=True)
class BrokerFeatures:
    """Supported ranges and finalized levels by feature name."""

    supported: dict[str, tuple[int, int]]
    finalized: dict[str, int]
    epoch: int = FINALIZED_FEATURES_EPOCH

    @classmethod
    def for_transaction_version(cls, transaction_version: int) -> BrokerFeatures:
        return cls(
            supported={METADATA_VERSION: (METADATA_VERSION_MIN_LEVEL, METADATA_VERSION_LEVEL),
                       TRANSACTION_VERSION: (0, MAX_TRANSACTION_VERSION)},
            finalized={name: level for name, level in ((METADATA_VERSION, METADATA_VERSION_LEVEL),
                                                       (TRANSACTION_VERSION, transaction_version)) if level > 0},
        )

    def supported_for(self, api_version: int) -> dict[str, tuple[int, int]]:
        """The supported ranges an ApiVersions response of `api_version` lists (v3: none starting at 0)."""
        return {name: versions for name, versions in self.supported.items() if api_version >= 4 or versions[0] > 0}
