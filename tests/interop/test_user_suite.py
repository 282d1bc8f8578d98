"""The user-style suite (tests/testing/user_suite: only the plugin's fixtures and confluent-kafka) passes against
Apache Kafka through `--minikafka-bootstrap`, as it passes against minikafka in the main run."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.apache_kafka import ApacheKafka
from tests.broker_process import REPO_ROOT

USER_SUITE = REPO_ROOT / "tests" / "testing" / "user_suite"
EMBEDDED_ONLY = {"test_records_survive_a_broker_restart"}


def user_suite_tests() -> set[str]:
    names: set[str] = set()
    for path in USER_SUITE.glob("test_*.py"):
        tree = ast.parse(Path(path).read_text())
        names |= {node.name for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    return names


def test_the_user_suite_passes_against_apache_kafka(apache_kafka: ApacheKafka) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(USER_SUITE),
         f"--minikafka-bootstrap={apache_kafka.bootstrap}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout[-4000:]
    total = len(user_suite_tests())
    assert total >= 6
    assert re.search(rf"\b{total - len(EMBEDDED_ONLY)} passed, {len(EMBEDDED_ONLY)} skipped\b", summary), summary
    assert "restart() needs the embedded minikafka broker" in done.stdout
