"""`AdminManager`: topic and config administration on behalf of the admin request handlers.

Every storage call that writes the topic registry (and fsyncs it) runs in a worker thread, so the event
loop never blocks on disk. Broker configs are altered through `DynamicBrokerConfig` (the dynamic keys, their
files and precedence): the LogCleaner is validated and reconfigured as Kafka's LogCleaner.reconfigure (its threads
are joined and restarted in a worker thread), and a dynamic `message.max.bytes` becomes every topic's default.
Single node: a replication factor other than 1 (or -1 = default) is refused
the way Kafka refuses an unreachable factor. Event-loop thread for the async methods; the storage calls
it makes are thread-safe (LogManager holds its own lock).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping, Sequence

from minikafka.broker.broker_loggers import BrokerLoggers
from minikafka.broker.client_metrics_configs import ClientMetricsConfigs
from minikafka.broker.config import BROKER_CONFIG_DEF, KafkaConfig
from minikafka.broker.coordinator_routing import internal_topic_replication_factor
from minikafka.broker.dynamic_config import (
    DYNAMIC_CONFIGS,
    TOPIC_DEFAULT_CONFIGS,
    DynamicBrokerConfig,
    cleaner_config_of,
    redacted,
)
from minikafka.broker.group_config_admin import GroupConfigAdmin
from minikafka.broker.partition_states import PartitionStates
from minikafka.cleaner.config import CLEANER_CONFIG_DEF
from minikafka.cleaner.log_cleaner import LogCleaner
from minikafka.protocol.errors import (
    InvalidConfigError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)
from minikafka.storage.config_def import format_value
from minikafka.storage.log_config import SOURCE_DEFAULT_CONFIG, ConfigEntry, LogConfig
from minikafka.storage.log_manager import LogManager, TopicMetadata

log = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
#: topics the coordinators write: replicated by their own replication-factor config (coordinator_routing.py)
COORDINATOR_TOPICS = INTERNAL_TOPICS | {"__share_group_state"}


class AdminManager:
    """Creates, deletes and reconfigures topics; describes topic and broker configs; alters the dynamic broker
    configs (one alteration at a time: `_broker_alter_lock`)."""

    def __init__(self, log_manager: LogManager, config: KafkaConfig, *,
                 dynamic_config: DynamicBrokerConfig | None = None, log_cleaner: LogCleaner | None = None) -> None:
        self.log_manager = log_manager
        self.dynamic = dynamic_config or DynamicBrokerConfig(config)
        self.log_cleaner = log_cleaner
        self._broker_alter_lock = asyncio.Lock()
        self.group_configs = GroupConfigAdmin(self.dynamic)
        self.broker_loggers = BrokerLoggers(config.node_id, config.broker_ids)
        #: replica assignment and leaders (set by the server once the logs are loaded; None: one broker, no state)
        self.partition_states: PartitionStates | None = None
        self.client_metrics = ClientMetricsConfigs(self.dynamic.log_dir)

    @property
    def config(self) -> KafkaConfig:
        """The broker config now: static props with the dynamic layers applied."""
        return self.dynamic.current

    def _check_replication(self, replication_factor: int, assignments: Sequence[Sequence[int]] = ()) -> None:
        """INVALID_REPLICATION_FACTOR above the broker count, INVALID_REPLICA_ASSIGNMENT for unknown brokers."""
        if self.partition_states is not None:
            self.partition_states.check_assignment(replication_factor, assignments)
            return
        if replication_factor not in (-1, 1):
            raise InvalidReplicationFactorError(
                f"The target replication factor of {replication_factor} cannot be reached because only 1 "
                "broker(s) are registered.")
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
        if name in COORDINATOR_TOPICS and self.partition_states is not None and not assignments:
            replication_factor = internal_topic_replication_factor(
                name, self.config.props, len(self.partition_states.cluster.nodes))
        elif replication_factor == -1 and not assignments:
            replication_factor = int(self.config["default.replication.factor"])
        self._check_replication(replication_factor, assignments)
        if assignments:
            if num_partitions != -1:
                raise InvalidRequestError("Both numPartitions and replicaAssignments were set")
            num_partitions = len(assignments)
        elif num_partitions == -1:
            num_partitions = int(self.config["num.partitions"])
        metadata = await asyncio.to_thread(
            self.log_manager.create_topic, name, num_partitions, dict(configs), validate_only
        )
        if not validate_only and self.partition_states is not None:
            self.partition_states.add_partitions(name, 0, num_partitions, replication_factor, assignments)
        return metadata

    async def auto_create_topic(self, name: str) -> TopicMetadata:
        return await self.create_topic(name, -1, -1, {})

    async def delete_topic(self, name: str) -> None:
        await asyncio.to_thread(self.log_manager.delete_topic, name)
        if self.partition_states is not None:
            self.partition_states.forget_topic(name)

    async def create_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] = (), validate_only: bool = False
    ) -> None:
        replication_factor = 1 if self.partition_states is None else self.partition_states.replication_factor(name)
        self._check_replication(replication_factor, assignments)
        existing = self.log_manager.topic(name)
        if self.partition_states is not None and existing is not None:
            self.partition_states.get(name, 0)  # the existing partitions' states, before the new ones exist
        await asyncio.to_thread(self.log_manager.create_partitions, name, count, validate_only)
        if not validate_only and self.partition_states is not None and name not in COORDINATOR_TOPICS:
            self.partition_states.add_partitions(
                name, existing.num_partitions if existing else 0, count, replication_factor, assignments)

    async def alter_topic_config(self, name: str, overrides: Mapping[str, str], validate_only: bool) -> None:
        await asyncio.to_thread(self.log_manager.alter_topic_config, name, dict(overrides), validate_only)

    def topic_overrides(self, name: str) -> dict[str, str]:
        metadata = self.log_manager.topic(name)
        if metadata is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} does not exist")
        return dict(metadata.config_overrides)

    def topic_name_for_id(self, topic_id: object) -> str | None:
        return self.log_manager.topic_name_for_id(topic_id)

    def describe_configs_for_overrides(self, overrides: Mapping[str, str]) -> list[ConfigEntry]:
        entries = LogConfig.describe(overrides, self.config.props)
        return [self.dynamic.retag_topic_entry(entry) for entry in entries]

    def describe_topic_config(self, name: str) -> list[ConfigEntry]:
        return self.describe_configs_for_overrides(self.topic_overrides(name))

    # ------------------------------------------------------------ broker configs
    def broker_config_layer(self, resource_name: str) -> dict[str, str]:
        """The dynamic configs set on the resource ("" = cluster default, else this node's id)."""
        return self.dynamic.layer(self.dynamic.is_per_broker(resource_name))

    async def alter_broker_config(self, resource_name: str, new_layer: Mapping[str, str], validate_only: bool,
                                  requested: Collection[str] = ()) -> None:
        """Replace the resource's dynamic layer: validate as Kafka's DynamicBrokerConfig.validate (names, types,
        LogCleaner.validateReconfiguration, the cross-key checks), then as its controller (`requested`: the names
        the request named), persist, then reconfigure what changed."""
        async with self._broker_alter_lock:
            per_broker = self.dynamic.is_per_broker(resource_name)
            props = self.dynamic.merged_for(per_broker, new_layer)
            new_cleaner = cleaner_config_of(props)
            cleaner_changed = self.log_cleaner is not None and new_cleaner != self.log_cleaner.config
            if self.log_cleaner is not None and cleaner_changed:
                try:
                    self.log_cleaner.validate_reconfiguration(new_cleaner)
                except InvalidConfigError as error:
                    # Kafka answers INVALID_REQUEST here, not INVALID_CONFIG (KAFKA-13609 keeps it for compatibility)
                    raise InvalidRequestError(f"Invalid dynamic configuration: {error.message}") from None
            new_config = self.dynamic.config_of(props)
            self.dynamic.check_listener_registration(new_config)
            self.dynamic.check_elr_min_insync_replicas(per_broker, new_layer, requested)
            if validate_only:
                return
            old_config = self.config
            await asyncio.to_thread(self.dynamic.persist, per_broker, new_layer)
            self.dynamic.commit(per_broker, new_layer, new_config)
            log.info("Updated %s with dynamic configs %s", f"broker {resource_name}" if per_broker else
                     "the cluster default broker config", redacted(new_layer))
            if self.log_cleaner is not None and cleaner_changed:
                await asyncio.to_thread(self.log_cleaner.reconfigure, new_config.cleaner)
                log.info("Reconfigured the log cleaner: %d threads, backoff %d ms, %s I/O bytes/s",
                         new_config.cleaner.threads, new_config.cleaner.backoff_ms,
                         new_config.cleaner.io_max_bytes_per_second)
            if any(new_config.props.get(name) != old_config.props.get(name) for name in TOPIC_DEFAULT_CONFIGS):
                await asyncio.to_thread(self._apply_log_defaults, new_config.props)

    def _apply_log_defaults(self, props: Mapping[str, str]) -> None:
        """Kafka's DynamicLogConfig: topics without an override pick up the new broker default."""
        self.log_manager.broker_props = dict(props)
        for name, metadata in self.log_manager.topics().items():
            try:
                log_config = self.log_manager.log_config(name)
            except UnknownTopicOrPartitionError:  # deleted meanwhile
                continue
            for partition in range(metadata.num_partitions):
                partition_log = self.log_manager.get_log(name, partition)
                if partition_log is not None:
                    partition_log.update_config(log_config)

    def describe_broker_config(self, resource_name: str) -> list[ConfigEntry]:
        """"": the cluster-default dynamic configs only (as Kafka); this node's id: every broker key with its
        synonyms, then the log.* defaults as the topic-config synonyms name them."""
        if resource_name == "":
            return self.dynamic.default_entries()
        try:
            node_id = int(resource_name)
        except ValueError:
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {resource_name}") from None
        if node_id not in self.config.broker_ids:  # the brokers of this process share one configuration
            raise InvalidRequestError(f"Unexpected broker id, expected {self.config.node_id} or empty string, but "
                                      f"received {resource_name}")
        entries: list[ConfigEntry] = []
        for name, key in BROKER_CONFIG_DEF.keys.items():
            value = node_id if name == "node.id" else self.config.values[name]
            entries.append(self.dynamic.broker_entry(
                name, format_value(key, value), key.type.describe_code, key.doc,
                format_value(key, key.default) if key.has_default else None))
        cleaner_values = CLEANER_CONFIG_DEF.parse(self.config.props)
        for name, key in CLEANER_CONFIG_DEF.keys.items():
            entries.append(self.dynamic.broker_entry(
                name, format_value(key, cleaner_values[name]), key.type.describe_code, key.doc,
                format_value(key, key.default)))
        seen = {entry.name for entry in entries}
        for topic_entry in self.describe_configs_for_overrides({}):
            for synonym_name, value, source in topic_entry.synonyms[:1]:
                if synonym_name in seen:
                    continue
                seen.add(synonym_name)
                if synonym_name in DYNAMIC_CONFIGS:
                    default = next(v for n, v, s in topic_entry.synonyms if s == SOURCE_DEFAULT_CONFIG)
                    entries.append(self.dynamic.broker_entry(
                        synonym_name, value, topic_entry.config_type, topic_entry.documentation, default))
                    continue
                entries.append(
                    ConfigEntry(
                        name=synonym_name, value=value, source=source, is_sensitive=topic_entry.is_sensitive,
                        read_only=True, config_type=topic_entry.config_type,
                        documentation=topic_entry.documentation,
                    )
                )
        entries.extend(self.dynamic.kafka_key_entries({entry.name for entry in entries}))
        return entries
