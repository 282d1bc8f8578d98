"""Fixtures for the Spark tests: one SparkSession for the whole test session, built by the project's own code
(`minikafka.pipeline.build_spark_session`, jars fetched by `ensure_spark_jars` into the repo's .cache)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from minikafka.pipeline.maven_jars import JarFetchError
from minikafka.pipeline.session import build_spark_session
from minikafka.pipeline.spark_jars import ensure_spark_jars
from tests.pipeline.pipeline_cli import SMALL_DATA_SPARK_CONF, SPARK_JARS_CACHE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession



@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """local[2], fast-start JVM flags; stopped at the end of the test session."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        jars = ensure_spark_jars(SPARK_JARS_CACHE)
    except JarFetchError as exc:
        pytest.skip(f"Spark connector/Delta jars unavailable: {exc}")
    session = build_spark_session(
        "local[2]",
        app_name="minikafka-tests",
        jars=jars,
        fast_start=True,
        # the connector's cached producers would keep calling the per-test brokers for 10 minutes after they stop
        # (idle for 5 s, they go at the evictor's next run: every minute by default)
        conf={"spark.driver.memory": "1g", "spark.kafka.producer.cache.timeout": "5s",
              "spark.kafka.producer.cache.evictorThreadRunInterval": "1s", **SMALL_DATA_SPARK_CONF},
    )
    try:
        yield session
    finally:
        session.stop()
