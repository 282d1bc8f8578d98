"""Run `minikafka snapshot|audit` as a user does: a `python -m minikafka.broker` child process with its own Spark.

The Spark settings are the test session's (tests/pipeline/conftest.py): a fast-starting JVM and few partitions."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

from minikafka.pipeline.session import FAST_START_JAVA_OPTIONS

REPO_ROOT = Path(__file__).resolve().parents[2]
SPARK_JARS_CACHE = REPO_ROOT / ".cache"
# tiny data: adaptive re-planning and more partitions than cores only add scheduling time
SMALL_DATA_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.adaptive.enabled": "false",
}


def run_pipeline_command(command: str, *args: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    conf = {**SMALL_DATA_SPARK_CONF, "spark.driver.extraJavaOptions": FAST_START_JAVA_OPTIONS}
    conf_args = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    return subprocess.run(
        [sys.executable, "-m", "minikafka.broker", command, *args, "--master", "local[2]", *conf_args],
        capture_output=True, text=True, timeout=timeout_s,
        env={**os.environ, "MINIKAFKA_SPARK_JARS_CACHE": str(SPARK_JARS_CACHE), "SPARK_LOCAL_IP": "127.0.0.1"},
    )


def run_pipeline_command_in_process(command: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The same command through `minikafka.broker.__main__.main` in this process: its SparkSession is the test
    session's (Spark's getOrCreate), so the CLI's wiring is tested without starting another JVM."""
    from minikafka.broker.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([command, *args])
    return subprocess.CompletedProcess([command, *args], code, out.getvalue(), err.getvalue())
