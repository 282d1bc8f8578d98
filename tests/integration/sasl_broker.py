"""`SaslMiniKafka`: `MiniKafka` started as an operator would start a SASL broker: `serve --config FILE` (a
server.properties, e.g. the README's) and `--add-scram` credentials bootstrapped into the log dir before the
broker serves. MiniKafka's own `--override`s (listeners, log.dirs, ports) still win over the file.

Not thread-safe, as MiniKafka."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from minikafka.testing import MiniKafka
from minikafka.testing.mini_kafka import ConfigValue


class SaslMiniKafka(MiniKafka):
    """A MiniKafka whose command adds `--config properties_file` and one `--add-scram` per entry of `add_scram`
    (`SCRAM-SHA-256=[name=admin,password=admin-secret]`)."""

    def __init__(
        self,
        config: Mapping[str, ConfigValue] | None = None,
        *,
        add_scram: Sequence[str] = (),
        properties_file: Path | None = None,
        listeners: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(config, listeners=listeners)
        self.add_scram = tuple(add_scram)
        self.properties_file = properties_file

    def command(self) -> list[str]:
        command = super().command()
        if self.properties_file is not None:
            command += ["--config", str(self.properties_file)]
        for credential in self.add_scram:
            command += ["--add-scram", credential]
        return command
