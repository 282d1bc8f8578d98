"""`BrokerProcess`: the suite's minikafka broker in a subprocess, data under the test's tmp_path.

It is `minikafka.testing.MiniKafka` (the broker users embed in their own suites) with the names the suite's tests
were written against. Tests talk to it only through sockets and real clients; `kill9()` really sends SIGKILL.
"""

from __future__ import annotations

from pathlib import Path

from minikafka.testing import MiniKafka

REPO_ROOT = Path(__file__).resolve().parent.parent


class BrokerProcess(MiniKafka):
    """A `MiniKafka` on `data_dir` with broker `overrides`; restartable on the same port and data dir."""

    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None) -> None:
        super().__init__(overrides, data_dir=data_dir)

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_servers

    def kill9(self) -> None:
        self.kill()
