"""A Maven fetch of jars says what it is doing: a first line before Maven runs, one per jar Maven downloads, and a
summary (the first Spark run was silent for ~30 s while its jars came in)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from minikafka.pipeline.maven_jars import MavenArtifact, ensure_maven_jars


@pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None, reason="needs Java and Maven")
def test_a_fetch_reports_its_start_and_summary_and_nothing_once_cached(tmp_path: Path) -> None:
    lines: list[str] = []
    artifact = MavenArtifact("org.slf4j", "slf4j-api", "1.7.36")
    lib_dir = ensure_maven_jars(tmp_path / "jars", [artifact], progress=lines.append)
    assert (lib_dir / "slf4j-api-1.7.36.jar").is_file()
    assert lines[0] == f"fetching slf4j-api and their dependencies with Maven into {lib_dir} (once)"
    assert re.fullmatch(r"fetched 1 jars \(0\.0 MB\) in \d+ s", lines[-1]), lines
    assert all(re.fullmatch(r"downloaded \S+\.jar \([^)]*\), jar \d+", line) for line in lines[1:-1]), lines
    lines.clear()
    ensure_maven_jars(tmp_path / "jars", [artifact], progress=lines.append)
    assert lines == []
