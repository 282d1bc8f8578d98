"""`minikafka serve` as a user starts it, with the mistakes a user makes: each exits non-zero with one line naming
the key, the value and the fix, and no traceback. And Kafka's log-dir lock: a second broker on a dir exits."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest

from minikafka.testing import MiniKafka
from minikafka.testing.mini_kafka import free_port

SERVE = [sys.executable, "-m", "minikafka.broker", "serve"]


def serve(*args: str, cwd: Path, timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
    """`minikafka serve ARGS` that is expected to exit on its own (a start-up failure)."""
    return subprocess.run([*SERVE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout_s)


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    return [line for line in output.splitlines() if " ERROR " in line]


def free_ports(tmp: Path) -> list[str]:
    return ["--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}", "--override", "minikafka.metrics.port=0"]


@pytest.fixture
def running(tmp_path: Path) -> Iterator[MiniKafka]:
    with MiniKafka(data_dir=tmp_path / "shared") as kafka:
        yield kafka


def test_a_second_broker_on_a_locked_log_dir_exits_naming_the_dir_and_touches_nothing(
    running: MiniKafka, tmp_path: Path
) -> None:
    before = {path.name: path.stat().st_mtime_ns for path in running.data_dir.iterdir()}
    result = serve("--override", f"log.dirs={running.data_dir}", *free_ports(tmp_path), cwd=tmp_path)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert f"Failed to acquire lock on file .lock in {running.data_dir}" in line
    assert "log.dirs" in line
    assert {path.name: path.stat().st_mtime_ns for path in running.data_dir.iterdir()} == before
    assert not (running.data_dir / ".kafka_cleanshutdown").exists()
    host, port = running.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=5):
        pass  # the first broker still serves


def test_the_lock_dies_with_a_killed_broker(tmp_path: Path) -> None:
    kafka = MiniKafka(data_dir=tmp_path / "data")
    kafka.start()
    kafka.kill()
    assert (kafka.data_dir / ".lock").exists()  # the file stays, as Kafka's does; the flock went with the process
    kafka.start()
    assert kafka.stop() == 0


def test_a_port_in_use_names_the_listener_and_how_to_change_it(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = serve("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
                       "minikafka.metrics.port=0", "--override", "log.dirs=data", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert f"listeners=PLAINTEXT://127.0.0.1:{port}" in line
    assert "address already in use" in line.lower()
    assert "choose another port" in line


def test_the_metrics_port_in_use_names_its_key(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = serve(*free_ports(tmp_path), "--override", f"minikafka.metrics.port={port}",
                       "--override", "log.dirs=data", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert f"minikafka.metrics.port={port}" in line and "address already in use" in line.lower()


def test_the_metrics_port_on_the_kafka_listeners_port_names_the_listener(tmp_path: Path) -> None:
    """The listener is bound before the admin port listens and listens after it (uvloop then closes it without an
    error): start-up must fail with one line, not serve nothing on the Kafka port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = serve("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
                   f"minikafka.metrics.port={port}", "--override", "log.dirs=data", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert f"listeners=PLAINTEXT://127.0.0.1:{port}" in line and "address already in use" in line.lower()


def test_a_log_dir_that_cannot_be_created_names_log_dirs(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    result = serve(*free_ports(tmp_path), "--override", "log.dirs=a-file/data", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert "log.dirs=a-file/data: cannot create the log dir (Not a directory)" in line
    assert "scram" not in line


def test_a_missing_config_file(tmp_path: Path) -> None:
    result = serve("--config", "no-such.properties", cwd=tmp_path)
    assert result.returncode == 2
    (line,) = error_lines(result)
    assert "--config=no-such.properties: no such file" in line


@pytest.mark.parametrize(("text", "expected"), [
    ("log.dirs=data\nnot a property\n", "line 2: 'not a property' is not key=value"),
    ("# comment\n=value\n", "line 2: '=value' is without a key"),
])
def test_a_malformed_config_line_is_named_with_its_number(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "server.properties").write_text(text)
    result = serve("--config", "server.properties", cwd=tmp_path)
    assert result.returncode == 2
    (line,) = error_lines(result)
    assert f"server.properties, {expected}; write one key=value per line" in line


@pytest.mark.parametrize("key", ["cleanup.policy", "log.cleanup.policy"])
def test_a_topic_config_by_its_topic_name_is_validated_as_its_broker_key(tmp_path: Path, key: str) -> None:
    result = serve("--override", f"{key}=compactt", *free_ports(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    (line,) = error_lines(result)
    assert "Invalid value compactt for configuration" in line


def test_an_unknown_listener_name(tmp_path: Path) -> None:
    result = serve("--override", "listeners=CLIENTS://127.0.0.1:0", "--override", "log.dirs=data", cwd=tmp_path)
    assert result.returncode == 2
    (line,) = error_lines(result)
    assert "listeners" in line and "CLIENTS" in line


def test_a_bind_failure_the_user_cannot_fix_keeps_its_traceback() -> None:
    from minikafka.broker.startup_error import StartupError, bind_error

    fixable = bind_error("listeners", "PLAINTEXT://h:1", OSError(errno.EADDRINUSE, "Address already in use"), "fix")
    assert isinstance(fixable, StartupError)
    bug = OSError(errno.EBADF, os.strerror(errno.EBADF))
    assert bind_error("listeners", "PLAINTEXT://h:1", bug, "fix") is bug


def test_version_and_help_defaults() -> None:
    version = subprocess.run([sys.executable, "-m", "minikafka.broker", "--version"],
                             capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and version.stdout.strip() == f"minikafka {installed_version('minikafka')}"
    help_text = subprocess.run([sys.executable, "-m", "minikafka.broker", "compact", "--help"],
                               capture_output=True, text=True, timeout=30, env={**os.environ, "COLUMNS": "200"})
    assert "(default: http://127.0.0.1:9404)" in help_text.stdout
    assert "(default: 300.0)" in help_text.stdout


def test_a_missing_compiled_speedup_is_warned_about_with_its_cost(tmp_path: Path) -> None:
    blocked = "aiokafka.record._crecords.default_records"
    with socket.socket() as squatter:  # the broker warns, then stops at the taken port (no need to serve)
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        args = ["serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{squatter.getsockname()[1]}",
                "--override", "minikafka.metrics.port=0", "--override", "log.dirs=data"]
        code = (f"import sys; sys.modules[{blocked!r}] = None; from minikafka.broker.__main__ import main; "
                f"sys.exit(main({args!r}))")
        without = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                                 timeout=30)
        with_all = serve(*args[1:], cwd=tmp_path)
    warnings = [line for line in without.stderr.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, without.stderr
    assert blocked in warnings[0] and "half the produce throughput" in warnings[0]
    assert " WARNING " not in with_all.stderr, "this interpreter has every speed-up"
