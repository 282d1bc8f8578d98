"""The pytest plugin in a pytest run of its own (pytester, in a subprocess): options, ini, fixtures, clean-up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minikafka.testing import MiniKafka

#: the inner suite's tests run in file order: a later one checks what an earlier one left (its own directory has no
#: pyproject.toml, so the suite's `-p no:randomly` would not reach it)
INNER_OPTIONS = ("-p", "no:cacheprovider", "-p", "no:randomly")
INNER_SUITE = '''
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

created = []

def topics(bootstrap):
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)

def test_the_factory_creates_topics_with_partitions_and_configs(minikafka_broker, minikafka_topic):
    name = minikafka_topic(partitions=4, config={"cleanup.policy": "compact"})
    created.append(name)
    metadata = AdminClient({"bootstrap.servers": minikafka_broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.topics[name].partitions) == 4
    assert name.startswith("test_the_factory_creates_topics_with_partitions_and_configs-")

def test_topics_of_an_earlier_test_are_deleted(minikafka_broker):
    assert created and created[0] not in topics(minikafka_broker.bootstrap_servers)

def test_broker_configs_from_the_options_apply(minikafka_broker):
    producer = Producer({"bootstrap.servers": minikafka_broker.bootstrap_servers})
    producer.produce("auto-created", value=b"x")
    assert producer.flush(30) == 0
    metadata = AdminClient({"bootstrap.servers": minikafka_broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.topics["auto-created"].partitions) == EXPECTED_PARTITIONS

def test_the_embedded_broker_can_restart(minikafka_broker):
    minikafka_broker.restart()
    assert "auto-created" in topics(minikafka_broker.bootstrap_servers)
'''


def test_embedded_broker_with_configs_from_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nminikafka_config =\n    num.partitions=3\n    log.cleaner.backoff.ms=100\n")
    pytester.makepyfile(INNER_SUITE.replace("EXPECTED_PARTITIONS", "3"))
    result = pytester.runpytest_subprocess(*INNER_OPTIONS)
    result.assert_outcomes(passed=4)


def test_embedded_broker_with_configs_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(INNER_SUITE.replace("EXPECTED_PARTITIONS", "2"))
    result = pytester.runpytest_subprocess(*INNER_OPTIONS, "--minikafka-config", "num.partitions=2")
    result.assert_outcomes(passed=4)


def test_an_external_broker_from_the_command_line_skips_what_only_the_embedded_one_can_do(
    pytester: pytest.Pytester,
) -> None:
    with MiniKafka({"num.partitions": 5}) as external:
        pytester.makepyfile(INNER_SUITE.replace("EXPECTED_PARTITIONS", "5") + f'''
def test_the_fixture_is_the_external_broker(minikafka_broker):
    assert minikafka_broker.bootstrap_servers == "{external.bootstrap_servers}"

def test_faults(minikafka_broker):
    minikafka_broker.faults.set_rtt(1, 100)
''')
        result = pytester.runpytest_subprocess(
            *INNER_OPTIONS, "-rs", f"--minikafka-bootstrap={external.bootstrap_servers}")
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(["*restart() needs the embedded minikafka broker*"])
    result.stdout.fnmatch_lines(["*faults needs the embedded minikafka broker*"])


def test_a_malformed_config_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(minikafka_broker):\n    pass\n")
    result = pytester.runpytest_subprocess(*INNER_OPTIONS, "--minikafka-config", "no-equals-sign")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*--minikafka-config expects KEY=VALUE, got 'no-equals-sign'*"])


REPO_ROOT = Path(__file__).resolve().parents[2]
LANDING_PAGE = REPO_ROOT / "README.md"
EXAMPLE = re.compile(r"```python\n(# test_orders\.py.*?)```", re.S)


def test_the_documented_example_passes_as_written(pytester: pytest.Pytester) -> None:
    """The example of the docs site's testing page, which the README's landing page shows too."""
    (example,) = EXAMPLE.findall((REPO_ROOT / "docs" / "testing.md").read_text())
    assert EXAMPLE.findall(LANDING_PAGE.read_text()) == [example]
    pytester.makepyfile(test_orders=example)
    pytester.runpytest_subprocess(*INNER_OPTIONS).assert_outcomes(passed=1)


def test_an_unknown_config_option_warns_in_the_users_run_and_fails_it_when_strict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(minikafka_broker):\n    pass\n")
    warned = pytester.runpytest_subprocess(*INNER_OPTIONS, "--minikafka-config", "log.cleaner.backof.ms=1")
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(["*UnknownConfigWarning: minikafka: the broker does not know the config "
                                 "'log.cleaner.backof.ms' and ignores it*"])
    strict = pytester.runpytest_subprocess(*INNER_OPTIONS, "--minikafka-config", "log.cleaner.backof.ms=1",
                                           "--minikafka-strict-config")
    strict.assert_outcomes(errors=1)
    strict.stdout.fnmatch_lines(["*BrokerStartError: minikafka: the broker does not know the config*"])


def test_a_bad_config_value_fails_the_fixture_with_the_brokers_error_line_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(minikafka_broker):\n    pass\n")
    result = pytester.runpytest_subprocess(*INNER_OPTIONS, "--minikafka-config", "cleanup.policy=compactt")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*BrokerStartError: the broker exited with 2 during start-up: invalid configuration: "
                                 "Invalid value compactt for configuration log.cleanup.policy*"])


def test_the_readme_example_emits_no_deprecation_warning(pytester: pytest.Pytester) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (example,) = re.findall(r"```python\n(# test_orders\.py.*?)```", readme, re.S)
    pytester.makepyfile(test_orders=example)
    # -p no:asyncio: this suite's pytest-asyncio warns about its own unset ini option; the README's user has none
    result = pytester.runpytest_subprocess(*INNER_OPTIONS, "-p", "no:asyncio", "-W",
                                           "error::DeprecationWarning")
    result.assert_outcomes(passed=1)
    assert "DeprecationWarning" not in result.stdout.str()


def test_embedded_brokers_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

def test_three_brokers_and_three_replicas(minikafka_broker):
    assert len(minikafka_broker.bootstrap_servers.split(",")) == 3
    producer = Producer({"bootstrap.servers": minikafka_broker.bootstrap_servers})
    producer.produce("replicated", value=b"x")
    assert producer.flush(30) == 0
    metadata = AdminClient({"bootstrap.servers": minikafka_broker.bootstrap_servers}).list_topics(timeout=10)
    assert sorted(metadata.brokers) == [1, 2, 3]
    assert sorted(metadata.topics["replicated"].partitions[0].replicas) == [1, 2, 3]
''')
    result = pytester.runpytest_subprocess(*INNER_OPTIONS, "--minikafka-brokers", "3",
                                           "--minikafka-config", "default.replication.factor=3")
    result.assert_outcomes(passed=1)
