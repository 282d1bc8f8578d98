"""`build_spark_session`: the one place a SparkSession is made, with the Kafka connector and Delta Lake on it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.pipeline.spark_jars import configured_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
# Cut JVM start-up by ~2 s; C1-only code is slower on long jobs, so this is for tests and short CLI runs.
FAST_START_JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m"


class SparkUnavailableError(RuntimeError):
    """PySpark is not installed (the `[spark]` extra)."""


def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkUnavailableError(
            "PySpark is not installed; install the Spark extra from your clone of minikafka: "
            "pip install './minikafka[spark]' (minikafka is not on a package index)"
        ) from exc


def build_spark_session(
    master: str | None = None,
    *,
    app_name: str = "minikafka-pipeline",
    jars: str | Path | list[Path] | None = None,
    conf: Mapping[str, str] | None = None,
    fast_start: bool = False,
) -> SparkSession:
    """A SparkSession on `master` (local[*] by default) with the connector and Delta jars and Delta's SQL extension.

    `jars`: the user's own jars (a directory, a comma-separated list or a list of paths) instead of the fetched set;
    `conf`: any further Spark settings (they win over the defaults here). If a session already exists in this
    process it is returned as it is (Spark's getOrCreate), so one process shares one session.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    master = master or DEFAULT_MASTER
    settings: dict[str, str] = {
        "spark.jars": ",".join(str(jar) for jar in configured_jars(jars)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.showConsoleProgress": "false",
    }
    if master.startswith("local"):
        # A laptop/CI machine: no web UI, and a handful of shuffle partitions instead of 200 empty ones.
        settings["spark.ui.enabled"] = "false"
        settings["spark.sql.shuffle.partitions"] = str(max(2, 2 * (os.cpu_count() or 1)))
        # Delta reads its log with 50 partitions by default (sized for clusters): seconds per MERGE on a laptop
        settings["spark.databricks.delta.snapshotPartitions"] = settings["spark.sql.shuffle.partitions"]
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if fast_start:
        settings["spark.driver.extraJavaOptions"] = FAST_START_JAVA_OPTIONS
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
