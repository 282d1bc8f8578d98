"""docs/testing-failures.md's Go example, as a reader would run it: its `go` block built against the versions the
page names (pinned in tests/interop/franzgo_docs_example/go.mod and go.sum) and run against `MiniKafka(brokers=3)`,
with `minikafka faults` from this checkout on PATH. It stops and starts broker 2 between its produce calls and
exits 0 only when the topic holds exactly its 1,500 records."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.testing import MiniKafka

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing-failures.md"
MODULE_DIR = Path(__file__).resolve().parent / "franzgo_docs_example"


def docs_go_program() -> str:
    (program,) = re.findall(r"```go\n(.*?)```", DOC.read_text(), re.S)
    return program


def test_the_docs_go_example_keeps_every_record_across_a_broker_stop(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go not found on PATH")
    for name in ("go.mod", "go.sum"):
        shutil.copy(MODULE_DIR / name, tmp_path / name)
    (tmp_path / "main.go").write_text(docs_go_program())
    # -mod=mod: fetch what go.mod pins when the module cache is empty (a fresh machine)
    env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=mod".strip()}
    built = subprocess.run([go, "build", "-buildvcs=false", "-o", "example", "."], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout + built.stderr
    with MiniKafka(brokers=3) as kafka:
        env = {**os.environ, "BOOTSTRAP": kafka.bootstrap_servers, "ADMIN_URL": kafka.admin_url,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        ran = subprocess.run([str(tmp_path / "example")], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert ran.stdout.strip().splitlines()[-1] == "records in orders: 1500"
        assert kafka.faults.describe()["stopped_brokers"] == []
