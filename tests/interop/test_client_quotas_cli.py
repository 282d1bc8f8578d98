"""Apache Kafka's `kafka-configs` (official 4.x jars) managing client quotas on minikafka: AlterClientQuotas for
`--alter --add-config/--delete-config` on clients and users (default entities included), DescribeClientQuotas for
`--describe` (for users the tool also asks DescribeUserScramCredentials), and the quotas surviving a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.interop.test_scram_configs_cli import kafka_configs

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]



def run(lib_dir: Path, broker: BrokerProcess, *args: str) -> str:
    result = kafka_configs(lib_dir, ["--bootstrap-server", broker.bootstrap, *args])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_kafka_configs_alters_and_describes_client_quotas(broker: BrokerProcess, kafka_lib_dir: Path) -> None:
    added = run(kafka_lib_dir, broker, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2048",
                "--entity-type", "clients", "--entity-name", "c1")
    assert "Completed updating config for client c1." in added
    run(kafka_lib_dir, broker, "--alter", "--add-config", "request_percentage=25.5", "--entity-type", "users",
        "--entity-default")
    run(kafka_lib_dir, broker, "--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "users",
        "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "c1")
    described = run(kafka_lib_dir, broker, "--describe", "--entity-type", "clients", "--entity-name", "c1")
    assert "Quota configs for client-id 'c1' are" in described
    assert "producer_byte_rate=1048576.0" in described and "consumer_byte_rate=2048.0" in described
    users = run(kafka_lib_dir, broker, "--describe", "--entity-type", "users")
    assert "Quota configs for the default user-principal are request_percentage=25.5" in users
    broker.restart()
    both = run(kafka_lib_dir, broker, "--describe", "--entity-type", "users", "--entity-name", "alice",
               "--entity-type", "clients", "--entity-name", "c1")
    assert "producer_byte_rate=4096.0" in both
    run(kafka_lib_dir, broker, "--alter", "--delete-config", "consumer_byte_rate", "--entity-type", "clients",
        "--entity-name", "c1")
    after = run(kafka_lib_dir, broker, "--describe", "--entity-type", "clients", "--entity-name", "c1")
    assert "consumer_byte_rate" not in after and "producer_byte_rate=1048576.0" in after
    refused = kafka_configs(kafka_lib_dir, ["--bootstrap-server", broker.bootstrap, "--alter", "--add-config",
                                            "producer_byte_rate=-1", "--entity-type", "clients", "--entity-name", "c2"])
    assert refused.returncode != 0
    assert "Quota producer_byte_rate must be greater than 0" in refused.stdout + refused.stderr
