"""The ShareConsumer example of docs/share-groups.md passes as written against minikafka (through the pytest
plugin's fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = re.compile(r"```python\n(# test_share_queue\.py.*?)```", re.S)


def test_the_share_group_example_passes_as_written(pytester: pytest.Pytester) -> None:
    (example,) = EXAMPLE.findall((REPO_ROOT / "docs" / "share-groups.md").read_text())
    pytester.makepyfile(test_share_queue=example)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
