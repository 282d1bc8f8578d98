"""A real minikafka broker for a test suite: `MiniKafka` (a broker in a child process) and a pytest plugin
(`minikafka_broker`, `minikafka_topic`; registered through the `pytest11` entry point)."""

from minikafka.broker.faults.fault_client import FaultError, Faults
from minikafka.testing.mini_kafka import BrokerStartError, MiniKafka, UnknownConfigWarning

__all__ = ["BrokerStartError", "FaultError", "Faults", "MiniKafka", "UnknownConfigWarning"]
