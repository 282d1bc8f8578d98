"""librdkafka's own integration tests (its `tests/` directory, built from a release tag) run against minikafka.

    python -m bench.librdkafka_tests --librdkafka-dir /tmp/librdkafka --tests 0081

The librdkafka tree is the caller's and stays outside this repository: export a tag of confluentinc/librdkafka
(`git archive v2.15.0 | tar -x -C /tmp/librdkafka`), then `./configure && make libs && make -C tests test-runner`.
This script starts one minikafka with the set-up librdkafka's suite expects of its broker (an authorizer, with
User:ANONYMOUS a super user: 0081 creates, describes and deletes ACLs), writes a test.conf naming its bootstrap in
a temporary directory, runs `tests/test-runner` once per test number there (TESTS=<n>, TEST_KAFKA_VERSION=4.3.1 so
that no test is skipped as needing a newer broker), and prints each verdict, its time and the failing assertion.
Exit status 0 only if every test passed. A test's own log is kept in that directory and named on failure.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from minikafka.testing import MiniKafka

#: what librdkafka's CI brokers run with (its tests/trivup set-up): ACL requests need an authorizer
BROKER_CONFIG = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
BROKER_VERSION = "4.3.1"
TEST_TIMEOUT_S = 1800.0
_FAILURE = re.compile(r"### Test .* failed at .*|Test assertion failed: .*")
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def run_test(runner: Path, number: str, bootstrap: str, work_dir: Path) -> tuple[bool, float, list[str], Path]:
    """One `test-runner` run of test `number`; (passed, seconds, failure lines, its log)."""
    (work_dir / "test.conf").write_text(f"bootstrap.servers={bootstrap}\n")
    log_path = work_dir / f"{number}.log"
    libs = [str(runner.parent.parent / "src"), str(runner.parent.parent / "src-cpp")]
    env = {**os.environ, "TESTS": number, "TEST_KAFKA_VERSION": BROKER_VERSION,
           "LD_LIBRARY_PATH": os.pathsep.join([*libs, os.environ.get("LD_LIBRARY_PATH", "")])}
    started = time.monotonic()
    with log_path.open("wb") as log_file:
        done = subprocess.run([str(runner)], cwd=work_dir, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                              timeout=TEST_TIMEOUT_S, check=False)
    elapsed = time.monotonic() - started
    text = _COLOUR.sub("", log_path.read_text(errors="replace"))
    failures = [match.group(0) for match in _FAILURE.finditer(text)]
    return done.returncode == 0, elapsed, failures, log_path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--librdkafka-dir", type=Path, required=True,
                        help="a librdkafka source tree with tests/test-runner built")
    parser.add_argument("--tests", nargs="+", default=["0081"], help="test numbers (default: 0081)")
    args = parser.parse_args(argv)
    runner = args.librdkafka_dir.resolve() / "tests" / "test-runner"
    if not runner.is_file():
        print(f"{runner} not found: build librdkafka's tests first (make libs && make -C tests test-runner)",
              file=sys.stderr)
        return 2
    results = []
    with MiniKafka(BROKER_CONFIG) as broker, tempfile.TemporaryDirectory(prefix="librdkafka-tests-") as tmp:
        print(f"minikafka at {broker.bootstrap_servers}, config {BROKER_CONFIG}")
        for number in args.tests:
            passed, elapsed, failures, log_path = run_test(runner, number, broker.bootstrap_servers, Path(tmp))
            results.append(passed)
            print(f"{number}: {'PASSED' if passed else 'FAILED'} in {elapsed:.0f} s")
            if not passed:
                kept = Path(tempfile.gettempdir()) / f"librdkafka-{number}-{os.getpid()}.log"
                kept.write_bytes(log_path.read_bytes())
                print("\n".join(f"  {line}" for line in failures[:5]) + f"\n  log: {kept}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
