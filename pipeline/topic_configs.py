"""A topic's effective configs, read with DescribeConfigs over the wire (kafka-python's admin client), so the
audit works against any Kafka broker; also the pipeline commands' check, before Spark starts, that the broker
answers and the topic exists."""

from __future__ import annotations

from collections.abc import Mapping

_CLIENT_PREFIX = "kafka."
#: how long the admin client tries the bootstrap servers and waits for an answer (kafka-python's default is 30 s)
TIMEOUT_MS = 10_000


def _admin_kwargs(kafka_options: Mapping[str, str] | None) -> dict[str, str]:
    """`kafka.security.protocol` (the connector's spelling) -> `security_protocol` (kafka-python's)."""
    return {key[len(_CLIENT_PREFIX):].replace(".", "_"): value
            for key, value in (kafka_options or {}).items()
            if key.startswith(_CLIENT_PREFIX) and key != "kafka.isolation.level"}


def describe_topic_configs(
    bootstrap_servers: str, topic: str, kafka_options: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every config of `topic` with its effective value (defaults included); ValueError, in one line, for an unknown
    topic or a broker that does not answer within TIMEOUT_MS (the pipeline commands call this before Spark starts)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.errors import KafkaTimeoutError, UnknownTopicOrPartitionError

    options = {"bootstrap_timeout_ms": TIMEOUT_MS, "request_timeout_ms": TIMEOUT_MS, **_admin_kwargs(kafka_options)}
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="minikafka-pipeline", **options)
    except KafkaTimeoutError as exc:
        raise ValueError(f"no broker answers at {bootstrap_servers} (--bootstrap-servers) within "
                         f"{TIMEOUT_MS // 1000} s: is it running? ({exc})") from None
    try:
        # kafka-python hands DescribeConfigs' per-resource errors back as an empty result: Metadata says it
        (metadata,) = admin.describe_topics([topic])
        if metadata["error_code"] == UnknownTopicOrPartitionError.errno:
            raise ValueError(f"topic {topic} does not exist on {bootstrap_servers}")
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    except UnknownTopicOrPartitionError:
        raise ValueError(f"topic {topic} does not exist on {bootstrap_servers}") from None
    except KafkaTimeoutError as exc:
        raise ValueError(f"the broker at {bootstrap_servers} did not describe topic {topic} within "
                         f"{TIMEOUT_MS // 1000} s ({exc})") from None
    finally:
        admin.close()
    entries = described.get("topic", {}).get(topic, {})
    return {name: entry["value"] for name, entry in entries.items() if entry.get("value") is not None}


def is_compacted(configs: Mapping[str, str]) -> bool:
    """Whether `cleanup.policy` (comma-separated) includes compact."""
    return "compact" in [policy.strip() for policy in configs.get("cleanup.policy", "delete").split(",")]
