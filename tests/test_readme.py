"""The README works as written on a fresh clone: its first screen, `make run` with its variables, the install
commands (a path or a wheel: minikafka is not on a package index), the MiniKafka and Delta-reading examples, and
no link or note that points outside the repository. (The pytest example runs in tests/testing/test_pytest_plugin.py,
the security section in tests/interop/test_readme_security_example.py, the Kafka tools command in
tests/interop/test_kafka_tools_command.py.)"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from minikafka.testing.mini_kafka import LOOPBACK, free_port, metadata_broker_count

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
#: what `pip install X` may name besides a path or a wheel: packages that are on the index
INDEX_PACKAGES = {"confluent-kafka", "pytest", "deltalake[pyarrow]"}


def code_blocks(language: str = "") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_the_first_screen_shows_the_two_commands() -> None:
    first = code_blocks()[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make run", "make test"]


def test_make_run_with_the_readmes_variables(tmp_path: Path) -> None:
    (documented,) = re.findall(r"`(make run PORT=\S+ HOST=\S+ DATA_DIR=\S+ METRICS_PORT=\S+)`", README)
    port, metrics_port = free_port(), free_port()
    values = {"PORT": str(port), "HOST": LOOPBACK, "DATA_DIR": str(tmp_path / "data"),
              "METRICS_PORT": str(metrics_port)}
    command = [re.sub(r"^(\w+)=.*", lambda m: f"{m[1]}={values[m[1]]}", word) for word in shlex.split(documented)]
    # the broker of the Python running this test (its .venv or a nox env), without re-installing it
    command += ["-o", ".venv/.installed", f"BIN={Path(sys.executable).parent}"]
    dry_run = subprocess.run([*command, "-n"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert f"listeners=PLAINTEXT://{LOOPBACK}:{port}" in dry_run.stdout, dry_run.stdout + dry_run.stderr
    make = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert make.poll() is None, make.communicate()[0].decode()
            try:
                assert metadata_broker_count(LOOPBACK, port) == 1
                break
            except OSError:
                assert time.monotonic() < deadline, "make run did not serve on PORT"
                time.sleep(0.05)
        assert (tmp_path / "data" / ".lock").exists()
        console = f"http://{LOOPBACK}:{metrics_port}/"
        with urllib.request.urlopen(console, timeout=30) as page:
            assert b"<html" in page.read().lower()
    finally:
        os.killpg(make.pid, signal.SIGTERM)
        output = make.communicate(timeout=60)[0].decode()
    assert "minikafka shut down cleanly" in output
    # the start-up line tells where the console is; its requests are not logged (Kafka logs no HTTP)
    (started,) = [line for line in output.splitlines() if "minikafka started:" in line]
    assert f"console {console}," in started and f"metrics {console}metrics," in started, started
    assert "GET / HTTP" not in output, output


def test_every_pip_install_names_a_path_a_wheel_or_an_index_package() -> None:
    installs = re.findall(r"pip install ([^`\n#]+)", README)
    assert installs
    for arguments in installs:
        for argument in shlex.split(arguments.replace("...", "")):
            assert argument.startswith(("./", "dist/")) or argument in INDEX_PACKAGES, (arguments, argument)


def test_the_wheel_the_readme_names_is_what_pip_wheel_builds(tmp_path: Path) -> None:
    (wheel_command,) = re.findall(r"`(pip wheel --no-deps -w dist \./minikafka)`", README)
    (wheel_name,) = re.findall(r"pip install dist/(minikafka-[^`]+\.whl)", README)
    command = shlex.split(wheel_command.replace("./minikafka", str(REPO)).replace("-w dist", f"-w {tmp_path}"))
    subprocess.run([sys.executable, "-m", *command, "-q"], check=True, timeout=300, capture_output=True)
    assert [path.name for path in tmp_path.iterdir()] == [wheel_name]


def test_the_minikafka_example_runs_as_written() -> None:
    (example,) = [block for block in code_blocks("python") if "from minikafka.testing import MiniKafka" in block]
    exec(compile(example, "README.md", "exec"), {})  # the README's own example


#: fresh interpreters that run the README's Delta line (an abort at exit showed in about 1 run of 20)
DELTA_READER_RUNS = 5


def test_reading_a_snapshot_as_written(tmp_path: Path) -> None:
    """The README's Delta line, in fresh interpreters, exits 0 every time. It reads through deltalake's
    QueryBuilder (DataFusion's Rust threads). The earlier `to_pyarrow_table()` line scanned a pyarrow dataset, on
    Arrow's C++ thread pools with a filesystem that calls back into Python, and aborted at interpreter exit
    ("terminate called without an active exception", -6) in about 1 run of 20 on deltalake 1.3 to 1.6."""
    deltalake = pytest.importorskip("deltalake", reason="deltalake is in the [test] extra, not in make test-pythons")
    import pyarrow as pa

    table = tmp_path / "customers"
    deltalake.write_deltalake(str(table), pa.table({"key": [b"c1"], "value": [b"alice"]}))
    (line,) = [line for line in README.splitlines() if line.startswith("$ python -c \"import deltalake")]
    command = shlex.split(line.removeprefix("$ ").replace("/data/customers", str(table)))
    for run in range(DELTA_READER_RUNS):
        result = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (run, result.returncode, result.stderr)
        assert result.stdout.strip() == "[{'key': b'c1', 'value': b'alice'}]", result.stdout


def test_no_placeholder_and_no_path_outside_the_repository() -> None:
    assert "<!--" not in README
    assert "../" not in README
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith(("http://", "https://")):
            assert (REPO / target).exists(), target
