"""`ScramMiniKafka`: a MiniKafka whose SCRAM users exist before the first connection (shared by the ACL
comparison test and bench/security_throughput.py)."""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.testing import MiniKafka


class ScramMiniKafka(MiniKafka):
    """`MiniKafka` started with `serve --add-scram` for each of `scram_credentials` (Kafka's `kafka-storage format
    --add-scram` syntax), so SCRAM users exist before the first connection. Not thread-safe, as MiniKafka."""

    def __init__(self, scram_credentials: Sequence[str], config: dict[str, str], listeners: dict[str, str]) -> None:
        super().__init__(config, listeners=listeners)
        self.scram_credentials = list(scram_credentials)

    def command(self) -> list[str]:
        return super().command() + [arg for credential in self.scram_credentials for arg in ("--add-scram", credential)]
