"""A topic's effective configs, read with DescribeConfigs over the wire (kafka-python's admin client), so the
audit works against any Kafka broker."""

from __future__ import annotations

from collections.abc import Mapping

_CLIENT_PREFIX = "kafka."


def _admin_kwargs(kafka_options: Mapping[str, str] | None) -> dict[str, str]:
    """`kafka.security.protocol` (the connector's spelling) -> `security_protocol` (kafka-python's)."""
    return {key[len(_CLIENT_PREFIX):].replace(".", "_"): value
            for key, value in (kafka_options or {}).items()
            if key.startswith(_CLIENT_PREFIX) and key != "kafka.isolation.level"}


def describe_topic_configs(
    bootstrap_servers: str, topic: str, kafka_options: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every config of `topic` with its effective value (defaults included); ValueError for an unknown topic."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.errors import UnknownTopicOrPartitionError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="minikafka-audit",
                             **_admin_kwargs(kafka_options))
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    except UnknownTopicOrPartitionError as exc:
        raise ValueError(f"topic {topic} does not exist on {bootstrap_servers}") from exc
    finally:
        admin.close()
    entries = described.get("topic", {}).get(topic, {})
    return {name: entry["value"] for name, entry in entries.items() if entry.get("value") is not None}
