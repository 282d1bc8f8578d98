"""A real minikafka broker for a test suite: `MiniKafka` (a broker in a child process) and a pytest plugin
(`minikafka_broker`, `minikafka_topic`; registered through the `pytest11` entry point)."""

from typing import TYPE_CHECKING

from minikafka.testing.mini_kafka import BrokerStartError, MiniKafka, UnknownConfigWarning

if TYPE_CHECKING:
    from minikafka.broker.faults.fault_client import FaultError, Faults

__all__ = ["BrokerStartError", "FaultError", "Faults", "MiniKafka", "UnknownConfigWarning"]


def __getattr__(name: str) -> object:
    """`Faults` and `FaultError` on first use: their HTTP client (urllib, the admin client's argparse options) is
    not imported by a test that only starts a broker (bench/startup.py's `python -c` child)."""
    if name in ("FaultError", "Faults"):
        from minikafka.broker.faults import fault_client

        return getattr(fault_client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
