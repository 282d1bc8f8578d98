"""What `minikafka serve` has imported when it answers its first Metadata: the start path's budget (issue 36).

A real `minikafka serve` (the module `python -m minikafka.broker` runs, in a child process) is observed, not
replaced: before `main()` runs, the child wraps the Metadata handler (and, with the admin HTTP port on,
`SocketServer.start`) so that their first call writes `sys.modules`. The minikafka modules and the third-party
packages in it must equal `startup_imports.txt` beside this file: a change that adds an import to the start path
(or removes one) updates that list on purpose, in the same commit. The heavy modules the start path must never
reach (aiohttp, the console, cryptography, kafka-python's and aiokafka's clients...) are named below as well.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikafka.testing.mini_kafka import LOOPBACK, free_port, metadata_broker_count

ALLOW_LIST = Path(__file__).with_name("startup_imports.txt")

#: never on the start path of a broker without SSL or SASL listeners (the issue's list)
NEVER_BEFORE_SERVING = (
    "aiohttp", "cryptography", "pyspark", "minikafka.pipeline", "minikafka.testing",
    "minikafka.broker.admin_http", "minikafka.broker.admin_auth", "minikafka.broker.console",
    "kafka.admin", "kafka.consumer", "kafka.producer", "kafka.net", "kafka.client_async",
    "aiokafka.client", "aiokafka.consumer", "aiokafka.producer", "aiokafka.conn", "aiokafka.record.memory_records",
    "prometheus_client.exposition",
    # message classes of APIs the first requests do not use (protocol/messages.py imports them at first use)
    "kafka.protocol.admin", "kafka.protocol.consumer.group", "kafka.protocol.producer.transaction",
    "kafka.protocol.sasl",
    # the cleaner's core and its worker process's proxy: imported by the first round or worker start (LogCleaner),
    # in a cleaner thread; crc32c's __init__ (its version lookup imports importlib.metadata, email, csv...)
    "minikafka.cleaner.cleaner", "minikafka.cleaner.clean_worker", "minikafka.cleaner.offset_map_builder",
    "multiprocessing", "pickle", "importlib.metadata", "email", "crc32c._cli",
)

CHILD = """\
import json, os, sys
before = set(sys.modules)  # the interpreter's and site's own (.pth files of this environment)
from minikafka.broker import __main__ as cli  # what `python -m minikafka.broker` runs, first

from minikafka.broker import dispatcher, network
from minikafka.protocol.api_keys import ApiKey

out, where, argv = sys.argv[1], sys.argv[2], sys.argv[3:]

# A module a change would put on the start path: the log manager's start-up imports it (the guard's own check).
extra_import = os.environ.get("STARTUP_IMPORTS_TEST_EXTRA")
if extra_import:
    import importlib
    from minikafka.storage.log_manager import LogManager

    startup = LogManager.startup

    def startup_importing(self):
        importlib.import_module(extra_import)
        return startup(self)

    LogManager.startup = startup_importing

def snapshot():
    with open(out, "w") as file:
        json.dump(sorted(set(sys.modules) - before), file)

if where == "metadata":
    metadata = dispatcher.HANDLERS[ApiKey.METADATA]

    async def first_metadata(ctx, event, session):
        dispatcher.HANDLERS[ApiKey.METADATA] = metadata
        snapshot()
        return await metadata(ctx, event, session)

    dispatcher.HANDLERS[ApiKey.METADATA] = first_metadata
else:
    start = network.SocketServer.start

    async def listener_start(self, *args):
        snapshot()
        return await start(self, *args)

    network.SocketServer.start = listener_start
sys.exit(cli.main(argv))
"""


def start_path_modules(tmp_path: Path, where: str, metrics_port: int, extra_import: str | None = None) -> set[str]:
    """The modules a real `serve` imported by its first Metadata answer ("metadata") or by the moment its Kafka
    listener starts ("listener"), beyond what the interpreter had before the broker's first import.
    `extra_import` is imported by the log manager's start-up, as a change adding an import there would."""
    port = free_port()
    out = tmp_path / f"modules-{where}.json"
    argv = ["serve", "--override", f"listeners=PLAINTEXT://{LOOPBACK}:{port}",
            "--override", f"log.dirs={tmp_path / 'data'}", "--override", f"minikafka.metrics.port={metrics_port}"]
    env = {**os.environ, "STARTUP_IMPORTS_TEST_EXTRA": extra_import or ""}
    process = subprocess.Popen([sys.executable, "-c", CHILD, str(out), where, *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 60
        while process.poll() is None:
            try:
                metadata_broker_count(LOOPBACK, port)
                break
            except (OSError, ConnectionError, ValueError):
                assert time.monotonic() < deadline, "the broker did not answer Metadata within 60 s"
                time.sleep(0.01)
    finally:
        process.terminate()  # a graceful stop (SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output.decode(errors="replace")[-3000:]
    return set(json.loads(out.read_text()))


def budgeted(modules: set[str]) -> set[str]:
    """minikafka's modules by name; third-party packages by top-level name (their inner modules change with the
    version installed); the standard library is not counted."""
    names = {name for name in modules if name.startswith("minikafka.")}
    for name in modules:
        top = name.partition(".")[0]
        if top not in ("minikafka", "cython_runtime") and top not in sys.stdlib_module_names and top[0] != "_":
            names.add(top)
    return names


def allow_list() -> set[str]:
    lines = ALLOW_LIST.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def heavy(modules: set[str]) -> set[str]:
    return {name for name in modules for prefix in NEVER_BEFORE_SERVING
            if name == prefix or name.startswith(prefix + ".")}


def test_first_metadata_answer_imports_only_the_allow_list(tmp_path: Path) -> None:
    modules = start_path_modules(tmp_path, "metadata", metrics_port=-1)
    assert not heavy(modules), f"imported before the first Metadata answer: {sorted(heavy(modules))}"
    found, allowed = budgeted(modules), allow_list()
    assert found == allowed, (
        f"the start path changed: imported now but not in {ALLOW_LIST.name}: {sorted(found - allowed)}; "
        f"in {ALLOW_LIST.name} but no longer imported: {sorted(allowed - found)}. If that is on purpose (and "
        f"bench.startup still passes), update {ALLOW_LIST} in the same commit.")


@pytest.mark.parametrize("metrics_port", [0])
def test_admin_http_machinery_is_imported_after_the_kafka_listener_starts(tmp_path: Path, metrics_port: int) -> None:
    """With the metrics/admin port on (the default), its server and the console come after the listener."""
    modules = start_path_modules(tmp_path, "listener", metrics_port)
    assert not heavy(modules), f"imported before the Kafka listener started: {sorted(heavy(modules))}"
    assert budgeted(modules) <= allow_list()


@pytest.mark.parametrize("extra_import", ["minikafka.cleaner.clean_worker", "kafka.admin"])
def test_a_heavy_import_added_to_the_start_path_is_caught(tmp_path: Path, extra_import: str) -> None:
    """The guard itself: the same broker with one heavy module imported during its log manager's start-up (as a
    module-level import added there would) fails the checks above: a minikafka module both (a third-party
    package's module is budgeted by its package's name, so only the heavy list names it)."""
    modules = start_path_modules(tmp_path, "metadata", metrics_port=-1, extra_import=extra_import)
    assert extra_import in heavy(modules)
    if extra_import.startswith("minikafka."):
        assert extra_import in budgeted(modules) - allow_list()


def test_every_handler_the_dispatcher_imports_at_first_request_exists() -> None:
    """The dispatcher's table names most handlers by module (imported at the API's first request): each name
    resolves to a coroutine function, so a typo fails here rather than at some client's first request."""
    from minikafka.broker.dispatcher import HANDLER_NAMES

    for api_key, name in HANDLER_NAMES.items():
        module, _, function = name.partition(".")
        handler = getattr(importlib.import_module(f"minikafka.broker.handlers.{module}"), function or "handle")
        assert inspect.iscoroutinefunction(handler), (api_key, name)


def _aiohttp_loaded(pid: int) -> bool:
    """Whether the process has mapped aiohttp's compiled HTTP parser (its import loads it)."""
    return "/aiohttp/_http_parser" in Path(f"/proc/{pid}/maps").read_text()


def test_the_admin_http_server_is_imported_and_started_at_its_first_connection(tmp_path: Path) -> None:
    """A broker whose admin port nobody uses never imports aiohttp; the first client of that port is answered."""
    from urllib.request import urlopen

    from minikafka.testing import MiniKafka

    with MiniKafka(data_dir=tmp_path) as kafka:
        assert kafka.pid is not None
        assert metadata_broker_count(LOOPBACK, kafka.port) == 1
        time.sleep(0.5)  # the old code had imported aiohttp in a thread by now
        assert not _aiohttp_loaded(kafka.pid)
        with urlopen(kafka.metrics_url, timeout=60) as response:
            assert response.status == 200
            assert b"kafka_server_" in response.read()
        assert _aiohttp_loaded(kafka.pid)
