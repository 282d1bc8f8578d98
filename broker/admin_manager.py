"""`AdminManager`: topic and config administration on behalf of the admin request handlers.

Every storage call that writes the topic registry (and fsyncs it) runs in a worker thread, so the event
loop never blocks on disk. Single node: a replication factor other than 1 (or -1 = default) is refused
the way Kafka refuses an unreachable factor. Event-loop thread for the async methods; the storage calls
it makes are thread-safe (LogManager holds its own lock).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from broker.config import BROKER_CONFIG_DEF, KafkaConfig
from protocol.errors import InvalidReplicationFactorError, InvalidRequestError, UnknownTopicOrPartitionError
from storage.config_def import format_value
from storage.log_config import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    ConfigEntry,
    LogConfig,
)
from storage.log_manager import LogManager, TopicMetadata

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class AdminManager:
    """Creates, deletes and reconfigures topics; describes topic and broker configs."""

    def __init__(self, log_manager: LogManager, config: KafkaConfig) -> None:
        self.log_manager = log_manager
        self.config = config

    def _check_replication(self, replication_factor: int, assignments: Sequence[Sequence[int]] = ()) -> None:
        if replication_factor not in (-1, 1):
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                "factor of {0} cannot be reached because only 1 broker(s) are registered.".format(
                    replication_factor
                )
            )
        for replicas in assignments:
            if list(replicas) != [self.config.node_id]:
                raise InvalidRequestError(
                    f"Replica assignment {list(replicas)} names brokers other than node {self.config.node_id}"
                )

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        *,
        assignments: Sequence[Sequence[int]] = (),
        validate_only: bool = False,
    ) -> TopicMetadata:
        self._check_replication(replication_factor, assignments)
        if assignments:
            if num_partitions != -1:
                raise InvalidRequestError("Both numPartitions and replicaAssignments were set")
            num_partitions = len(assignments)
        elif num_partitions == -1:
            num_partitions = int(self.config["num.partitions"])
        return await asyncio.to_thread(
            self.log_manager.create_topic, name, num_partitions, dict(configs), validate_only
        )

    async def auto_create_topic(self, name: str) -> TopicMetadata:
        return await self.create_topic(name, -1, -1, {})

    async def delete_topic(self, name: str) -> None:
        await asyncio.to_thread(self.log_manager.delete_topic, name)

    async def create_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] = (), validate_only: bool = False
    ) -> None:
        self._check_replication(1, assignments)
        await asyncio.to_thread(self.log_manager.create_partitions, name, count, validate_only)

    async def alter_topic_config(self, name: str, overrides: Mapping[str, str], validate_only: bool) -> None:
        await asyncio.to_thread(self.log_manager.alter_topic_config, name, dict(overrides), validate_only)

    def topic_overrides(self, name: str) -> dict[str, str]:
        metadata = self.log_manager.topic(name)
        if metadata is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} does not exist")
        return dict(metadata.config_overrides)

    def topic_name_for_id(self, topic_id: object) -> str | None:
        for name, metadata in self.log_manager.topics().items():
            if metadata.topic_id == topic_id:
                return name
        return None

    def describe_configs_for_overrides(self, overrides: Mapping[str, str]) -> list[ConfigEntry]:
        return LogConfig.describe(overrides, self.config.props)

    def describe_topic_config(self, name: str) -> list[ConfigEntry]:
        return self.describe_configs_for_overrides(self.topic_overrides(name))

    def describe_broker_config(self) -> list[ConfigEntry]:
        """The broker's own keys, plus the log.* defaults as the topic-config synonyms name them."""
        entries: list[ConfigEntry] = []
        for name, key in BROKER_CONFIG_DEF.keys.items():
            explicit = name in self.config.props
            entries.append(
                ConfigEntry(
                    name=name,
                    value=format_value(key, self.config.values[name]),
                    source=SOURCE_STATIC_BROKER_CONFIG if explicit else SOURCE_DEFAULT_CONFIG,
                    is_sensitive=False,
                    read_only=True,
                    config_type=key.type.describe_code,
                    documentation=key.doc,
                )
            )
        seen = {entry.name for entry in entries}
        for topic_entry in LogConfig.describe({}, self.config.props):
            for synonym_name, value, source in topic_entry.synonyms[:1]:
                if synonym_name in seen:
                    continue
                seen.add(synonym_name)
                entries.append(
                    ConfigEntry(
                        name=synonym_name, value=value, source=source, is_sensitive=topic_entry.is_sensitive,
                        read_only=True, config_type=topic_entry.config_type,
                        documentation=topic_entry.documentation,
                    )
                )
        return entries
