"""PySpark jobs over a Kafka topic (the `[spark]` extra): `minikafka snapshot` keeps a compacted topic as a Delta
table, `minikafka audit` proves what compaction guarantees. Talks to brokers over the wire and the admin port only."""

from minikafka.pipeline.session import build_spark_session

__all__ = ["build_spark_session"]
