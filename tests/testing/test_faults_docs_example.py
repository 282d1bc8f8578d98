"""The Python example of docs/testing-failures.md passes as written against minikafka."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = re.compile(r"```python\n(# test_failover\.py.*?)```", re.S)
pytestmark = pytest.mark.timeout(180)


def test_the_failure_examples_pass_as_written(pytester: pytest.Pytester) -> None:
    (example,) = EXAMPLE.findall((REPO_ROOT / "docs" / "testing-failures.md").read_text())
    pytester.makepyfile(test_failover=example)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=4)
