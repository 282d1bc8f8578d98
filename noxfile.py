"""`make test-pythons`: the suite without its Java and Spark parts on the other supported Pythons (3.12, 3.13).

`make test` stays on the .venv's Python (3.11). Each interpreter gets its own virtualenv under `.nox/`, reused
between runs and made by uv (the .venv's, which `make` installs); it installs minikafka editable, as the .venv has
it (tests/test_packaging.py builds and checks the wheel itself), with the `[test]` extra minus PySpark, deltalake,
the linters and nox, at the versions constraints.txt pins (the lock `make lock` writes for 3.11 to 3.13), built
with the setuptools build-constraints.txt pins. Before the tests, the session checks that the compiled speed-ups
(aiokafka's Cython record code, uvloop) import on that Python: without them the broker still works but falls back
to pure Python at about half the produce throughput, which the tests alone would not notice.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nox

PYTHONS = ["3.12", "3.13"]
#: test extras the Java- and Spark-free part of the suite does not import
_NOT_NEEDED = ("pyspark", "deltalake", "ruff", "mypy", "import-linter", "nox")
#: the Java (Apache Kafka, Java clients, Kafka's CLI tools) and Spark parts of the suite
PYTEST_ARGS = [
    "--ignore=tests/interop",
    "--ignore=tests/pipeline",
    "--ignore=tests/docker",
    "--ignore=tests/storage/test_dump_log_interop.py",
    "-m", "not interop and not slow",
    # `apache`: the side-by-side `target` parameter that starts Apache Kafka. The 100k-record round trips (one per
    # client and codec, ~5 min of the ~11 on a busy 2-core machine) leave: the codecs are covered by
    # tests/protocol/records and the clients by the rest of tests/integration, and the target stays ~10 min a Python.
    "-k", "not apache and not test_100k_keyed_records_round_trip",
    "-p", "no:cacheprovider",
    "-q", "-ra", "--durations=15", "-n", "2", "--dist", "loadfile",
]
SPEEDUPS_CHECK = (
    "import aiokafka.record._crecords.default_records, uvloop, crc32c; "
    "import sys; print('compiled speed-ups present on', sys.version.split()[0])"
)

LOCK = "constraints.txt"
#: the pinned build backend (setuptools) for the editable install's isolated build, written by `make lock` as well
BUILD_LOCK = "build-constraints.txt"

nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = True


def _test_requirements() -> tuple[str, list[str]]:
    """minikafka's own extras the test extra names (`minikafka[docs]`), and the other requirements."""
    extras = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    wanted = [spec for spec in extras["test"] if not spec.startswith(_NOT_NEEDED)]
    own = [spec.removeprefix("minikafka[").rstrip("]") for spec in wanted if spec.startswith("minikafka[")]
    return ",".join(own), [spec for spec in wanted if not spec.startswith("minikafka[")]


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    own_extras, requirements = _test_requirements()
    session.install("--constraints", LOCK, "-e", f".[{own_extras}]" if own_extras else ".", *requirements,
                    env={"UV_BUILD_CONSTRAINT": BUILD_LOCK, "PIP_BUILD_CONSTRAINT": BUILD_LOCK})
    session.run("python", "-c", SPEEDUPS_CHECK)
    # `nox -s tests -- tests/protocol -n 0`: other paths or pytest options in place of the whole suite
    session.run("python", "-m", "pytest", *PYTEST_ARGS, *(session.posargs or ["tests"]))
