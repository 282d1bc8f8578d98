"""`BrokerLoggers`: the BROKER_LOGGER config resource (`kafka-configs --entity-type broker-loggers`), Kafka's
RuntimeLoggerManager and LoggingController over Python's `logging`.

Describe lists `root` and every logger the process has created, each with its effective level in log4j's names
(a logger without its own level shows its nearest ancestor's, as Kafka does). IncrementalAlterConfigs SETs a
logger's level (FATAL, ERROR, WARN, INFO, DEBUG, TRACE) or DELETEs it (the logger inherits again; `root` cannot be
deleted), with Kafka's checks and messages. Levels are not persisted, as in Kafka. Python has no FATAL or TRACE:
FATAL is CRITICAL; TRACE is registered as level 5, below DEBUG.

Event-loop thread (Python's logging module locks its own state).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError

ROOT_LOGGER = "root"
SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG = 6
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

_TO_PYTHON = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
              "DEBUG": logging.DEBUG, "TRACE": TRACE}
_TO_LOG4J = {logging.CRITICAL: "FATAL", logging.ERROR: "ERROR", logging.WARNING: "WARN", logging.INFO: "INFO",
             logging.DEBUG: "DEBUG", TRACE: "TRACE", logging.NOTSET: "ALL"}
VALID_LOG_LEVELS = ", ".join(sorted(_TO_PYTHON))
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    existing = logging.Logger.manager.loggerDict.get(name)
    return existing if isinstance(existing, logging.Logger) else None


def _level_name(level: int) -> str:
    if level in _TO_LOG4J:
        return _TO_LOG4J[level]
    return _TO_LOG4J[max((known for known in _TO_LOG4J if known <= level), default=logging.NOTSET)]


class BrokerLoggers:
    """Describes and alters the process's loggers for the broker `node_id`."""

    def __init__(self, node_id: int, broker_ids: list[int] | None = None) -> None:
        self.node_id = node_id
        #: the brokers of this process: they share its loggers
        self.broker_ids = broker_ids or [node_id]

    def check_name(self, resource_name: str | None, *, describing: bool) -> None:
        """Kafka's checks of the resource name: this node's id (ConfigHelper's messages when describing,
        RuntimeLoggerManager's when altering)."""
        if describing and not resource_name:
            raise InvalidRequestError("Broker id must not be empty")
        try:
            node_id = int(resource_name or "")
        except ValueError:
            prefix = "Broker" if describing else "Node"
            raise InvalidRequestError(f"{prefix} id must be an integer, but it is: {resource_name}") from None
        if node_id not in self.broker_ids:
            if describing:
                raise InvalidRequestError(f"Unexpected broker id, expected {self.node_id} but received {node_id}")
            raise InvalidRequestError(f"Unexpected node id. Expected {self.node_id}, but received {node_id}")

    def loggers(self) -> dict[str, str]:
        """Logger name -> effective level, `root` first, the rest sorted."""
        levels = {ROOT_LOGGER: _level_name(logging.getLogger().getEffectiveLevel())}
        for name in sorted(logging.Logger.manager.loggerDict):
            logger = _logger(name)
            if logger is not None:
                levels[name] = _level_name(logger.getEffectiveLevel())
        return levels

    def validate(self, configs: Iterable[Any]) -> None:
        """RuntimeLoggerManager.validateLogLevelConfigs."""
        for config in configs:
            name, operation = config.name, config.config_operation
            if operation in (SET, DELETE) and _logger(name) is None:
                raise InvalidConfigError(f"Logger {name} does not exist!")
            if operation == SET and config.value not in _TO_PYTHON:
                raise InvalidConfigError(f"Cannot set the log level of {name} to {config.value} as it is not a "
                                         f"supported log level. Valid log levels are {VALID_LOG_LEVELS}")
            if operation == DELETE and name == ROOT_LOGGER:
                raise InvalidRequestError(f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
            if operation in (APPEND, SUBTRACT):
                verb = "APPEND" if operation == APPEND else "SUBTRACT"
                raise InvalidRequestError(f"{verb} operation is not allowed for the BROKER_LOGGER resource")
            if operation not in (SET, DELETE, APPEND, SUBTRACT):
                raise InvalidRequestError(f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER "
                                          "resource")

    def alter(self, configs: Iterable[Any]) -> None:
        for config in configs:
            logger = _logger(config.name)
            assert logger is not None  # validated
            if config.config_operation == SET:
                logger.setLevel(_TO_PYTHON[config.value])
                logging.getLogger(__name__).warning("Updated the log level of %s to %s", config.name, config.value)
            else:
                logger.setLevel(logging.NOTSET)
                logging.getLogger(__name__).warning("Unset the log level of %s", config.name)
