"""`python -m minikafka.broker` imports with the cyclic garbage collector paused and main() resumes it (issue 36):
checked in fresh interpreters, since the pause is a property of the process."""

from __future__ import annotations

import subprocess
import sys

RUN_AS_MAIN = """\
import gc, runpy, sys
frozen_before = gc.get_freeze_count()  # 3.12 starts with a few hundred objects frozen already
sys.argv = ["minikafka", *sys.argv[1:]]
paused = []
real_disable = gc.disable
def record_disable():
    paused.append(True)
    real_disable()
gc.disable = record_disable
try:
    runpy.run_module("minikafka.broker", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
print(bool(paused), gc.isenabled(), gc.get_freeze_count() > frozen_before)
"""


def _run(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_module_run_as_main_pauses_the_collector_and_main_resumes_it_with_the_imports_frozen() -> None:
    assert _run(RUN_AS_MAIN, "--version") == "True True True"


def test_importing_the_module_leaves_the_collector_alone() -> None:
    assert _run("import gc; frozen_before = gc.get_freeze_count(); from minikafka.broker import __main__; "
                "print(gc.isenabled(), gc.get_freeze_count() - frozen_before)") == "True 0"
