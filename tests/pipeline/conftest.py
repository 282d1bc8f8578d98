"""Fixtures for the Spark tests: one SparkSession for the whole test session, built by the project's own code
(`minikafka.pipeline.build_spark_session`, jars fetched by `ensure_spark_jars` into the repo's .cache)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from minikafka.pipeline.maven_jars import JarFetchError
from minikafka.pipeline.session import build_spark_session
from minikafka.pipeline.spark_jars import ensure_spark_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parents[2]
SPARK_JARS_CACHE = REPO_ROOT / ".cache"


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
        # tiny data: adaptive re-planning and more than 2 partitions only add scheduling time
        conf={"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2",
              "spark.databricks.delta.snapshotPartitions": "1", "spark.sql.adaptive.enabled": "false"},
    )
    try:
        yield session
    finally:
        session.stop()
