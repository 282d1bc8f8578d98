"""The container image's entry point (docker/Dockerfile), configured the way Apache Kafka's image is (KIP-975).

`python -m minikafka.broker.container run` builds the broker's properties, lowest precedence first, from
- the image's `server.properties` (config/server.properties: every key with its default),
- `IMAGE_DEFAULTS`, the settings of a single dev node in a container (every interface, a volume for the data),
- a mounted `/mnt/shared/config/server.properties`, as `apache/kafka` reads one,
- every `KAFKA_*` environment variable, named by KIP-975's rule: the prefix dropped, lower case, then `___` -> `-`,
  `__` -> `_`, `_` -> `.` (`KAFKA_ADVERTISED_LISTENERS` -> `advertised.listeners`,
  `KAFKA_LISTENER_NAME_PLAINTEXT__HOST_...` -> `listener.name.plaintext_host....`),
writes them to one file and replaces itself with `minikafka serve --config FILE`.

Apache Kafka's rules kept on top of that: `KAFKA_LISTENERS` defaults to `KAFKA_ADVERTISED_LISTENERS` with every
host turned into 0.0.0.0, and the image's JVM/log4j variables (`KAFKA_HEAP_OPTS`, ...) are no properties. Kafka's
wrapper removes `KAFKA_` anywhere in the name, which would turn `KAFKA_MINIKAFKA_METRICS_PORT` into
`minimetrics.port`; here only the prefix goes. A compose file written for `apache/kafka` runs a KRaft controller next
to the broker; a single minikafka node has no controller quorum, so the listeners named in
`controller.listener.names` are not bound and the quorum settings are dropped, with one log line saying so.

`python -m minikafka.broker.container healthcheck` exits 0 once the first listener accepts a TCP connection and
`/metrics` answers, reading the ports from the file `run` wrote (so it follows `KAFKA_LISTENERS`).
Functions only; nothing here is shared between threads.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import sys
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from minikafka.broker.listeners import WILDCARD_HOSTS
from minikafka.protocol.errors import InvalidConfigError

log = logging.getLogger("minikafka.container")

ENV_PREFIX = "KAFKA_"
#: Variables of apache/kafka's image that configure its JVM or log4j, never the broker (KafkaDockerWrapper).
EXCLUDED_ENV = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME",
})
#: A single dev node in a container: reachable from the host through a published 9092, data on the volume.
IMAGE_DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://0.0.0.0:9092",
    "advertised.listeners": "PLAINTEXT://localhost:9092",
    "log.dirs": "/var/lib/minikafka",
    "minikafka.metrics.host": "0.0.0.0",
    # as Apache Kafka's config/server.properties for one node
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
}
#: KRaft quorum settings: a single minikafka node is its own controller, so they have nothing to configure.
KRAFT_QUORUM_KEYS = ("process.roles", "controller.listener.names", "controller.quorum.voters",
                     "controller.quorum.bootstrap.servers")
MOUNTED_PROPERTIES = Path("/mnt/shared/config/server.properties")
IMAGE_PROPERTIES = Path("/opt/minikafka/config/server.properties")
FINAL_PROPERTIES = Path("/opt/minikafka/run/server.properties")
_HOST_OF_LISTENER = re.compile(r"://[^:]*:")


class ContainerConfigError(ValueError):
    """A setting the image cannot run with; the message names the variable or property."""


def property_name(env_name: str) -> str | None:
    """The Kafka property a `KAFKA_*` variable sets by KIP-975's rule, or None for any other variable."""
    if not env_name.startswith(ENV_PREFIX) or env_name in EXCLUDED_ENV or len(env_name) == len(ENV_PREFIX):
        return None
    # Kafka's order: every `_` to `.`, then `...` (was `___`) to `-`, then `..` (was `__`) to `_`.
    return env_name[len(ENV_PREFIX):].lower().replace("_", ".").replace("...", "-").replace("..", "_")


def properties_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The properties the `KAFKA_*` variables set, with `listeners` derived from `advertised.listeners` as
    apache/kafka's image derives it when only the advertised ones are given."""
    props: dict[str, str] = {}
    for env_name, value in sorted(environ.items()):
        name = property_name(env_name)
        if name is None:
            continue
        if "\n" in value or "\r" in value:
            raise ContainerConfigError(f"{env_name}: a property value cannot span lines")
        props[name] = value
    if "advertised.listeners" in props and "listeners" not in props:
        props["listeners"] = _HOST_OF_LISTENER.sub("://0.0.0.0:", props["advertised.listeners"])
    return props


def container_properties(image: Mapping[str, str], mounted: Mapping[str, str],
                         environ: Mapping[str, str]) -> dict[str, str]:
    """The broker's properties from the image's file, the image defaults, a mounted file and the environment.

    The image's `advertised.listeners` default (localhost:9092) only applies while neither listeners nor advertised
    listeners are configured: it names the default listener, which a configured `listeners` may not have."""
    configured = {**mounted, **properties_from_env(environ)}
    defaults = dict(IMAGE_DEFAULTS)
    if "listeners" in configured or "advertised.listeners" in configured:
        del defaults["advertised.listeners"]
    props = {**image, **defaults, **configured}
    _drop_controller(props)
    return props


def _drop_controller(props: dict[str, str]) -> None:
    """Remove the KRaft controller's listeners and quorum settings a compose file for apache/kafka carries."""
    roles = {role.strip() for role in props.get("process.roles", "").split(",") if role.strip()}
    if roles and "broker" not in roles:
        raise ContainerConfigError(
            f"process.roles={props['process.roles']}: minikafka is a broker (KAFKA_PROCESS_ROLES must include broker)")
    controller_names = {name.strip().upper() for name in props.get("controller.listener.names", "").split(",")
                        if name.strip()}
    if controller_names:
        for key in ("listeners", "advertised.listeners"):
            if key not in props:
                continue
            kept = [entry.strip() for entry in props[key].split(",")
                    if entry.strip() and entry.strip().split("://", 1)[0].upper() not in controller_names]
            if key == "listeners" and not kept:
                raise ContainerConfigError(f"listeners={props[key]}: every listener is a controller listener "
                                           f"(controller.listener.names={props['controller.listener.names']})")
            props[key] = ",".join(kept)
    dropped = [key for key in KRAFT_QUORUM_KEYS if props.pop(key, None) is not None]
    if dropped:
        log.info("a single minikafka node is its own KRaft controller: %s ignored%s", ", ".join(dropped),
                 f", listener(s) {', '.join(sorted(controller_names))} not bound" if controller_names else "")


def render_properties(props: Mapping[str, str]) -> str:
    return "".join(f"{name}={value}\n" for name, value in sorted(props.items()))


def run(image_file: Path, mounted_file: Path, output: Path, environ: Mapping[str, str]) -> int:
    """Write the final properties and exec the broker; returns only on a configuration error (exit code 2)."""
    from minikafka.broker.config import load_properties  # the broker's whole config layer: not for healthcheck

    try:
        image = load_properties(image_file)
        mounted = load_properties(mounted_file) if mounted_file.exists() else {}
        props = container_properties(image, mounted, environ)
    except (InvalidConfigError, ContainerConfigError, OSError) as error:
        log.error("invalid configuration: %s", error)
        return 2
    if mounted:
        log.info("read %s", mounted_file)
    from minikafka.storage.checkpoint import atomic_write

    output.parent.mkdir(parents=True, exist_ok=True)
    # 0600 from the first byte: a KAFKA_* variable may carry a JAAS line's passwords
    atomic_write(output, render_properties(props).encode(), durable=False, mode=0o600)
    command = [sys.executable, "-m", "minikafka.broker", "serve", "--config", str(output)]
    sys.stderr.flush()
    os.execv(sys.executable, command)
    return 0  # pragma: no cover - execv does not return


def _probe_host(host: str) -> str:
    return "127.0.0.1" if host in WILDCARD_HOSTS else host


def read_rendered(path: Path) -> dict[str, str]:
    """The properties `render_properties` wrote (one `key=value` a line, nothing else)."""
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if line)


def healthcheck(final_file: Path, timeout_s: float = 3.0) -> int:
    """0 when the broker's first listener accepts a connection and /metrics answers; 1 (with the reason) if not."""
    try:
        props = read_rendered(final_file)
        listener = props["listeners"].split(",")[0].strip()
        host, _, port = listener.split("://", 1)[1].rpartition(":")
        socket.create_connection((_probe_host(host.strip("[]")), int(port)), timeout=timeout_s).close()
        metrics_port = int(props.get("minikafka.metrics.port", "9404"))
        if metrics_port > 0:
            metrics_host = _probe_host(props.get("minikafka.metrics.host", "127.0.0.1"))
            with urllib.request.urlopen(f"http://{metrics_host}:{metrics_port}/metrics", timeout=timeout_s):
                pass
    except (OSError, KeyError, ValueError) as error:
        print(f"unhealthy: {error!r}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikafka.broker.container",
                                     description="minikafka's container entry point (apache/kafka's KAFKA_* settings)")
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="write the broker's properties from KAFKA_* and start it")
    run_parser.add_argument("--image-config", type=Path, default=IMAGE_PROPERTIES)
    run_parser.add_argument("--mounted-config", type=Path, default=MOUNTED_PROPERTIES)
    run_parser.add_argument("--output", type=Path, default=FINAL_PROPERTIES)
    check_parser = commands.add_parser("healthcheck", help="exit 0 when the broker accepts connections")
    check_parser.add_argument("--config", type=Path, default=FINAL_PROPERTIES)
    args = parser.parse_args(argv)
    if args.command == "healthcheck":
        return healthcheck(args.config)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
                        stream=sys.stderr)
    return run(args.image_config, args.mounted_config, args.output, os.environ)


if __name__ == "__main__":
    sys.exit(main())
