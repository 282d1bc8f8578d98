"""The web console on the metrics/admin port (`GET /`): see broker/console/routes.py."""

from minikafka.broker.console.routes import Console

__all__ = ["Console"]
