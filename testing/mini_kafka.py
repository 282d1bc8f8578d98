"""`MiniKafka`: a real minikafka broker in a child process, for a test suite.

    from minikafka.testing import MiniKafka

    with MiniKafka({"log.cleaner.backoff.ms": 100, "segment.ms": 1000}) as kafka:
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka.bootstrap_servers})
        ...
        kafka.restart()          # same port, same data: a consumer's restart test
        kafka.kill()             # SIGKILL, as `kill -9` does; start() recovers the torn tail
        kafka.faults.push_request_errors("Produce", "NOT_LEADER_OR_FOLLOWER")   # docs/testing-failures.md

    with MiniKafka({"ssl.keystore.type": "PEM", "ssl.keystore.location": "server.pem"},
                   listeners={"SSL": "SSL"}) as kafka:
        kafka.bootstrap_servers_for("SSL")   # the SSL listener's 127.0.0.1:port (PLAINTEXT stays on .port)

The broker runs as `python -m minikafka.broker serve` in its own process, so the test keeps its own event loop,
signal handlers and threads, and can kill the broker for real. It listens on free loopback ports and keeps its
data in a temporary directory (removed by `stop()`) unless `data_dir` is given.
"""

from __future__ import annotations

import atexit
import functools
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from minikafka.storage.topic_config_synonyms import TOPIC_TO_BROKER_SYNONYM

if TYPE_CHECKING:
    from minikafka.broker.faults.fault_client import Faults

__all__ = ["BrokerStartError", "ConfigValue", "MiniKafka", "UnknownConfigWarning", "broker_environment", "config_text",
           "free_port", "free_ports", "metadata_broker_count"]

LOOPBACK = "127.0.0.1"
ConfigValue = str | int | float | bool
_POLL_INTERVAL_S = 0.005
_BIND_RETRIES = 3
_LOG_TAIL_LINES = 40
#: what the broker logs for each config it does not know (broker.config.KafkaConfig), with its hint
_UNKNOWN_CONFIG_LINE = re.compile(r"Unknown broker configuration (\S+) ignored(.*?)(?: \(minikafka[.\w]*\))?$", re.M)
_ERROR_LINE = re.compile(r"^\[[^]]+\] ERROR (.*?)(?: \(minikafka[.\w]*\))?$", re.M)


class BrokerStartError(RuntimeError):
    """The broker exited or did not answer Metadata in time. The message starts with the broker's own error line
    (a locked log dir, an invalid value) when it logged one, and ends with its log tail."""


class UnknownConfigWarning(UserWarning):
    """A config given to `MiniKafka` (or `--minikafka-config`) that the broker does not know and ignores: a typo,
    most likely. `MiniKafka(strict_config=True)`, `--minikafka-strict-config` or
    pytest's `-W error::minikafka.testing.UnknownConfigWarning` (or a filterwarnings entry) make it an error."""


_EPHEMERAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: how many ports below the kernel's ephemeral range the ports are picked from
_LISTEN_PORT_SPAN = 12_000
#: the OS's randomness, not the `random` module's state, which test runners seed alike in every worker
_PORT_CHOICE = random.SystemRandom()


def _listen_port_range() -> range | None:
    """The ports just below the kernel's ephemeral range (Linux): no outgoing connection takes its source port from
    there, so a port a stopped broker freed is still free when it starts again on it (`restart()`, `kill()` then
    `start()`). A client's source port landing on it in between would otherwise fail the bind. None when the range
    cannot be read or leaves no room below it."""
    try:
        low = int(_EPHEMERAL_PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    ports = range(max(1024, low - _LISTEN_PORT_SPAN), low)
    return ports if len(ports) >= 1000 else None


def _bindable(ports: range) -> bool:
    probes = []
    try:
        for port in ports:
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probes.append(probe)
            probe.bind((LOOPBACK, port))
    except OSError:
        return False
    finally:
        for probe in probes:
            probe.close()
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, below the ephemeral range where there is one."""
    return free_ports(1)


def free_ports(count: int) -> int:
    """The first of `count` consecutive TCP ports on 127.0.0.1 that were all free a moment ago: picked at random
    below the kernel's ephemeral range (`_listen_port_range`), else the OS picks the first."""
    candidates = _listen_port_range()
    for _attempt in range(50):
        if candidates is not None:
            first = _PORT_CHOICE.randrange(candidates.start, candidates.stop - count + 1)
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((LOOPBACK, 0))
                first = probe.getsockname()[1]
            if first + count - 1 > 65535:
                continue
        if _bindable(range(first, first + count)):
            return first
    raise OSError(f"no {count} consecutive free ports found on {LOOPBACK}")


def metadata_broker_count(host: str, port: int, timeout_s: float = 2.0) -> int:
    """Send one Metadata v4 request (all topics) and return how many brokers the answer lists.

    Hand-encoded (a dozen bytes) so that readiness checks import no client library; works against any Kafka.
    """
    client_id = b"minikafka-testing"
    body = struct.pack(">hhih", 3, 4, 1, len(client_id)) + client_id + struct.pack(">ib", -1, 0)
    with socket.create_connection((host, port), timeout=timeout_s) as conn:
        conn.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _recv_exactly(conn, 4))
        response = _recv_exactly(conn, size)
    correlation_id, _throttle_ms, broker_count = struct.unpack_from(">iii", response, 0)
    if correlation_id != 1:
        raise ConnectionError(f"unexpected correlation id {correlation_id}")
    count: int = broker_count
    return count


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = conn.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        chunks += chunk
    return bytes(chunks)


def _kill_at_exit(process: subprocess.Popen[bytes]) -> None:
    """A broker left running when the interpreter exits (a test that never stopped it) is not orphaned."""
    if process.poll() is None:
        process.kill()
        process.wait()


def broker_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The broker child's environment: this process's, except where it forbids writing bytecode
    (PYTHONDONTWRITEBYTECODE, common in CI and containers) without naming a PYTHONPYCACHEPREFIX: then the broker
    keeps its .pyc files under the user's cache directory (`$XDG_CACHE_HOME/minikafka/pycache`, else
    `~/.cache/...`) instead of compiling minikafka from source at every start, about a second each
    (bench/startup.py); the source tree stays free of `__pycache__`. Python checks each .pyc against its source."""
    env = dict(os.environ if environ is None else environ)
    if env.get("PYTHONDONTWRITEBYTECODE") and not env.get("PYTHONPYCACHEPREFIX"):
        cache_home = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        del env["PYTHONDONTWRITEBYTECODE"]
        env["PYTHONPYCACHEPREFIX"] = str(cache_home / "minikafka" / "pycache")
    return env


def config_text(value: ConfigValue) -> str:
    """A config value as Kafka writes it: booleans as `true`/`false`."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def broker_properties(config: Mapping[str, ConfigValue]) -> dict[str, str]:
    """Kafka property strings for the broker; a topic config name (`segment.ms`) is replaced by the broker synonym
    that sets its default for every topic (`log.roll.ms`)."""
    return {TOPIC_TO_BROKER_SYNONYM.get(key, key): config_text(value) for key, value in config.items()}


class MiniKafka:
    """One minikafka broker in a child process on loopback: its ports, data directory and log file.

    `config` takes any broker property, or a topic property as the default of every topic, by Kafka's names.
    The broker is ready when `start()` returns: it has answered a Metadata request. `restart()` keeps the
    ports and the data. Not thread-safe: start, restart and stop it from one thread.
    """

    def __init__(
        self,
        config: Mapping[str, ConfigValue] | None = None,
        *,
        data_dir: str | Path | None = None,
        start_timeout_s: float = 30.0,
        listeners: Mapping[str, str] | None = None,
        strict_config: bool = False,
        brokers: int = 1,
    ) -> None:
        """`listeners` adds listeners beside the PLAINTEXT one (which readiness checks use): listener name ->
        security protocol (`{"SSL": "SSL", "CLIENTS": "SASL_SSL"}`), each on a free loopback port.
        A config the broker does not know raises an `UnknownConfigWarning` in this process when the broker starts;
        with `strict_config` the start fails with BrokerStartError instead. `brokers` runs that many brokers in the
        broker process (`minikafka.brokers`: ids 1..N, broker k on each listener's port + k - 1);
        `bootstrap_servers` then lists them all."""
        if not 1 <= brokers <= 64:
            raise ValueError(f"brokers must be between 1 and 64, got {brokers}")
        self.brokers = brokers
        self.strict_config = strict_config
        self.config = broker_properties(config or {})
        self.extra_listeners = {name.upper(): protocol.upper() for name, protocol in (listeners or {}).items()}
        if "PLAINTEXT" in self.extra_listeners:
            raise ValueError("the PLAINTEXT listener is always there; name the extra listeners otherwise")
        self._temp_root: Path | None = None
        if data_dir is None:
            self._temp_root = Path(tempfile.mkdtemp(prefix="minikafka-"))
            self.data_dir = self._temp_root / "data"
            self.log_path = self._temp_root / "broker.log"
        else:
            self.data_dir = Path(data_dir).absolute()  # the broker runs with the data dir as its working directory
            self.log_path = self.data_dir.parent / f"{self.data_dir.name}-broker.log"
        self.start_timeout_s = start_timeout_s
        self.port = free_ports(brokers)
        self.metrics_port = free_port()
        self.listener_ports = {name: free_ports(brokers) for name in self.extra_listeners}
        self.process: subprocess.Popen[bytes] | None = None
        self._kill_at_exit: functools.partial[None] | None = None
        self._started_once = False

    @property
    def bootstrap_servers(self) -> str:
        """`host:port` of the PLAINTEXT listener of every broker, comma-separated."""
        return self.bootstrap_servers_for("PLAINTEXT")

    def bootstrap_servers_for(self, listener_name: str) -> str:
        """`host:port` of a listener by name (`PLAINTEXT` or one given in `listeners`), of every broker."""
        name = listener_name.upper()
        port = self.port if name == "PLAINTEXT" else self.listener_ports[name]
        return ",".join(f"{LOOPBACK}:{port + index}" for index in range(self.brokers))

    @property
    def metrics_url(self) -> str:
        """Prometheus text at `/metrics`; the same port serves the admin API (`minikafka compact --admin-url`)."""
        return f"http://{LOOPBACK}:{self.metrics_port}/metrics"

    @property
    def admin_url(self) -> str:
        return f"http://{LOOPBACK}:{self.metrics_port}"

    @property
    def faults(self) -> Faults:
        """Wire-level faults of the running broker, set over its admin port (docs/testing-failures.md):
        `push_request_errors`, `set_rtt`, `disconnect_on`, `blackhole`, `clear_faults`. A refused fault raises
        `FaultError`. A broker with security configured needs `Faults(kafka.admin_url, AdminCredentials(...))`."""
        from minikafka.broker.faults.fault_client import Faults  # its HTTP client, on first use

        return Faults(self.admin_url)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def command(self) -> list[str]:
        listeners = [f"PLAINTEXT://{LOOPBACK}:{self.port}"]
        listeners += [f"{name}://{LOOPBACK}:{port}" for name, port in self.listener_ports.items()]
        protocol_map = {"PLAINTEXT": "PLAINTEXT", **self.extra_listeners}
        props = {
            "listener.security.protocol.map": ",".join(f"{name}:{protocol}" for name, protocol in protocol_map.items()),
            **self.config,
            "listeners": ",".join(listeners),
            "log.dirs": str(self.data_dir),
            "minikafka.metrics.port": str(self.metrics_port),
            **({"minikafka.brokers": str(self.brokers)} if self.brokers > 1 else {}),
        }
        command = [sys.executable, "-m", "minikafka.broker", "serve"]
        for key, value in props.items():
            command += ["--override", f"{key}={value}"]
        return command

    def start(self) -> MiniKafka:
        """Start the broker and return once it answers Metadata; raises BrokerStartError with its log tail."""
        if self.process is not None:
            raise RuntimeError(f"the broker is already running (pid {self.process.pid})")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(_BIND_RETRIES):
            log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
            self._spawn()
            try:
                self._wait_ready(log_offset)
            except BrokerStartError:
                self.process = None
                # A port picked by free_port() can be taken by another process before the broker binds it.
                if self._started_once or attempt == _BIND_RETRIES - 1 or not self._port_was_taken(log_offset):
                    if self._temp_root is not None and not self._started_once:
                        shutil.rmtree(self._temp_root, ignore_errors=True)  # the error carries the log tail
                    raise
                self.port, self.metrics_port = free_ports(self.brokers), free_port()
                self.listener_ports = {name: free_ports(self.brokers) for name in self.extra_listeners}
            else:
                self._started_once = True
                self._check_unknown_configs(log_offset)
                return self
        raise AssertionError("unreachable")

    def _spawn(self) -> None:
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                cwd=self.data_dir, env=broker_environment(),
            )
        self._kill_at_exit = functools.partial(_kill_at_exit, self.process)
        atexit.register(self._kill_at_exit)

    def _wait_ready(self, log_offset: int) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            code = self.process.poll()
            if code is not None:
                tail = self.log_tail(log_offset)
                errors = _ERROR_LINE.findall(tail)
                reason = f": {errors[-1]}" if errors else ""
                raise BrokerStartError(f"the broker exited with {code} during start-up{reason}\n{tail}")
            try:
                metadata_broker_count(LOOPBACK, self.port)
                return
            except (OSError, ConnectionError, struct.error):
                pass
            if time.monotonic() > deadline:
                self._terminate(signal.SIGKILL, 10.0)
                raise BrokerStartError(
                    f"the broker did not answer Metadata on {self.bootstrap_servers} within {self.start_timeout_s}s:\n"
                    f"{self.log_tail(log_offset)}"
                )
            time.sleep(_POLL_INTERVAL_S)

    def _check_unknown_configs(self, log_offset: int) -> None:
        """Bring the broker's "Unknown broker configuration" lines into this process as warnings (or an error)."""
        for name, hint in dict(_UNKNOWN_CONFIG_LINE.findall(self.log_tail(log_offset, lines=10_000))).items():
            message = f"minikafka: the broker does not know the config {name!r} and ignores it{hint} (a typo?)"
            if self.strict_config:
                self.stop()
                raise BrokerStartError(message)
            try:
                warnings.warn(message, UnknownConfigWarning, stacklevel=4)
            except UnknownConfigWarning:  # a warnings filter made it an error: no broker left behind
                self.stop()
                raise

    def _port_was_taken(self, log_offset: int) -> bool:
        return "address already in use" in self.log_tail(log_offset).lower()

    def log_tail(self, log_offset: int = 0, lines: int = _LOG_TAIL_LINES) -> str:
        """The last `lines` lines the broker wrote (since byte `log_offset` of its log file)."""
        if not self.log_path.exists():
            return "(no broker log)"
        with open(self.log_path, "rb") as log_file:
            log_file.seek(log_offset)
            text = log_file.read().decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def restart(self) -> MiniKafka:
        """Graceful stop and start on the same ports with the same data."""
        self._terminate(signal.SIGTERM, 30.0)
        return self.start()

    def kill(self) -> None:
        """SIGKILL the broker, as `kill -9` does: nothing is flushed. `start()` recovers from its data."""
        self._terminate(signal.SIGKILL, 10.0)

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM (graceful shutdown, SIGKILL after `timeout_s`), then remove a temporary data directory.
        Returns the broker's exit code (0 after a clean shutdown)."""
        code = self._terminate(signal.SIGTERM, timeout_s)
        if self._temp_root is not None:
            shutil.rmtree(self._temp_root, ignore_errors=True)
        return code

    def _terminate(self, signum: signal.Signals, timeout_s: float) -> int:
        process, self.process = self.process, None
        if process is None:
            return 0
        if self._kill_at_exit is not None:
            atexit.unregister(self._kill_at_exit)
        if process.poll() is None:
            process.send_signal(signum)
        try:
            return process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()

    def __enter__(self) -> MiniKafka:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.process.pid}" if self.process is not None else "stopped"
        return f"MiniKafka({self.bootstrap_servers}, {state}, data_dir={str(self.data_dir)!r})"
