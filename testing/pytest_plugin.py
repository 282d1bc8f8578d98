"""The minikafka pytest plugin (registered through the `pytest11` entry point; active once minikafka is installed).

Fixtures:
- `minikafka_broker` (session): a started `MiniKafka`, or the broker named by `--minikafka-bootstrap`.
- `minikafka_topic` (function): `minikafka_topic(partitions=3, config={"cleanup.policy": "compact"})` creates a
  topic with a unique name, returns the name, and deletes the topic after the test.

Options (command line, or the same name with underscores in the `[pytest]` ini section):
- `--minikafka-bootstrap HOST:PORT`: run the fixtures against an existing broker (Apache Kafka, say) instead of
  starting minikafka; tests that need the embedded broker's own features (`restart()`, `data_dir`) are skipped.
- `--minikafka-config KEY=VALUE` (repeatable; ini: one per line): configs of the embedded broker. A key the broker
  does not know is an `UnknownConfigWarning` in the test run; `--minikafka-strict-config` (ini:
  `minikafka_strict_config = true`) makes it an error of the fixture.
- `--minikafka-brokers N` (ini: `minikafka_brokers`): the embedded minikafka runs N brokers in its process
  (docs/testing-failures.md); `bootstrap_servers` lists them all.
"""

from __future__ import annotations

import re
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

import pytest

from minikafka.broker.faults.fault_client import Faults
from minikafka.testing.mini_kafka import ConfigValue, MiniKafka, config_text

BOOTSTRAP_OPTION = "minikafka_bootstrap"
CONFIG_OPTION = "minikafka_config"
BROKERS_OPTION = "minikafka_brokers"
STRICT_CONFIG_OPTION = "minikafka_strict_config"
_TOPIC_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


class KafkaBroker(Protocol):
    """What the fixtures hand a test: the embedded `MiniKafka` or an `ExternalBroker`."""

    @property
    def bootstrap_servers(self) -> str: ...


@dataclass(frozen=True)
class ExternalBroker:
    """A broker this plugin did not start (`--minikafka-bootstrap`): only its address is known."""

    bootstrap_servers: str

    def _embedded_only(self, what: str) -> NoReturn:
        pytest.skip(f"{what} needs the embedded minikafka broker (the suite runs against {self.bootstrap_servers})")

    @property
    def metrics_url(self) -> str:
        self._embedded_only("metrics_url")

    @property
    def data_dir(self) -> Path:
        self._embedded_only("data_dir")

    def restart(self) -> None:
        self._embedded_only("restart()")

    @property
    def faults(self) -> Faults:
        self._embedded_only("faults")


TopicFactory = Callable[..., str]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minikafka", "minikafka broker fixtures")
    group.addoption(
        "--minikafka-bootstrap", dest=BOOTSTRAP_OPTION, metavar="HOST:PORT", default=None,
        help="run the minikafka fixtures against this broker instead of starting minikafka",
    )
    group.addoption(
        "--minikafka-config", dest=CONFIG_OPTION, metavar="KEY=VALUE", action="append", default=None,
        help="a config of the embedded broker, by Kafka's property name (repeatable)",
    )
    group.addoption(
        "--minikafka-strict-config", dest=STRICT_CONFIG_OPTION, action="store_true", default=None,
        help="fail when a --minikafka-config key is unknown to the broker (default: a warning)",
    )
    group.addoption(
        "--minikafka-brokers", dest=BROKERS_OPTION, metavar="N", type=int, default=None,
        help="brokers the embedded minikafka runs (minikafka.brokers, default 1)",
    )
    parser.addini(BROKERS_OPTION, "brokers the embedded minikafka runs (default 1)", default="1")
    parser.addini(STRICT_CONFIG_OPTION, "fail on minikafka configs the broker does not know", type="bool",
                  default=False)
    parser.addini(BOOTSTRAP_OPTION, "bootstrap servers of an external broker for the minikafka fixtures")
    parser.addini(CONFIG_OPTION, "configs of the embedded minikafka broker, KEY=VALUE per line", type="linelist")


def _option(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def parse_config_lines(lines: list[str]) -> dict[str, ConfigValue]:
    configs: dict[str, ConfigValue] = {}
    for line in lines:
        key, separator, value = line.partition("=")
        if not separator or not key.strip():
            raise pytest.UsageError(f"--minikafka-config expects KEY=VALUE, got {line!r}")
        configs[key.strip()] = value.strip()
    return configs


@pytest.fixture(scope="session")
def minikafka_broker(pytestconfig: pytest.Config) -> Iterator[MiniKafka | ExternalBroker]:
    """The session's broker: a started `MiniKafka`, or the external one of `--minikafka-bootstrap`."""
    bootstrap = _option(pytestconfig, BOOTSTRAP_OPTION)
    if bootstrap:
        yield ExternalBroker(bootstrap)
        return
    configs = parse_config_lines(_option(pytestconfig, CONFIG_OPTION) or [])
    brokers = int(_option(pytestconfig, BROKERS_OPTION) or 1)
    with MiniKafka(configs, strict_config=bool(_option(pytestconfig, STRICT_CONFIG_OPTION)),
                   brokers=brokers) as broker:
        yield broker


@pytest.fixture(scope="session")
def _minikafka_admin(minikafka_broker: KafkaBroker) -> Iterator[Any]:
    # kafka-python (a minikafka dependency) reads its message schemas at import with importlib.resources.read_text,
    # deprecated on Python 3.11-3.12 (3.13 un-deprecated it): hundreds of DeprecationWarnings at import only, none
    # later, nothing the user's code can act on; they are kept out of the user's run (-W error would fail it).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"importlib\.resources")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"kafka\.")
        from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=minikafka_broker.bootstrap_servers, client_id="minikafka-pytest")
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def minikafka_topic(request: pytest.FixtureRequest, _minikafka_admin: Any) -> Iterator[TopicFactory]:
    """A factory of topics that exist for this test only; each is deleted when the test ends."""
    created: list[str] = []

    def create(
        name: str | None = None,
        *,
        partitions: int = 1,
        config: Mapping[str, ConfigValue] | None = None,
        replication_factor: int = 1,
    ) -> str:
        topic = name or unique_topic_name(request.node.name)
        configs = {key: config_text(value) for key, value in (config or {}).items()}
        _minikafka_admin.create_topics(
            {topic: {"num_partitions": partitions, "replication_factor": replication_factor, "configs": configs}},
            wait_for_metadata=True,
        )
        created.append(topic)
        return topic

    yield create
    if created:
        _delete_topics(_minikafka_admin, created)


def _delete_topics(admin: Any, topics: list[str], timeout_s: float = 15.0) -> None:
    """DeleteTopics, retried while the admin client reconnects (a test may have restarted the broker: kafka-python
    then refuses requests to the node until its reconnect backoff has passed)."""
    from kafka.errors import KafkaError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin.delete_topics(topics, raise_errors=False)
            return
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def unique_topic_name(test_name: str) -> str:
    """`<test name, Kafka-safe>-<8 hex digits>`; within Kafka's 249-character limit."""
    stem = _TOPIC_NAME_UNSAFE.sub("-", test_name).strip("-.")[:200] or "topic"
    return f"{stem}-{uuid.uuid4().hex[:8]}"
