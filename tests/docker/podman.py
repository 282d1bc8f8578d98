"""Podman as these machines run it, for the container tests: builds the image of docker/Dockerfile without a
registry and runs containers of it.

- The runtime is runc (crun refuses this kernel's hybrid cgroups) and every container gets explicit ulimits (the
  engine's defaults exceed the host's hard limits).
- The base image is a stand-in for `python:3.11-slim` made from Debian's packages with debootstrap and `podman
  import`, built once and cached by its tag (`BASE_IMAGE`).
- pip inside the build cannot reach the package index (it would have to trust the host's certificate authorities),
  so the host's pip builds wheels of the dependencies and the build installs from them (`WHEELS_DIR`).
Nothing is pulled: every build runs with `--pull=never`.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
BASE_IMAGE = "localhost/minikafka-python-standin:3.11-bookworm"
IMAGE = "localhost/minikafka:test-container"
STAND_IN_LABEL = "org.minikafka.stand-in"
RUNC = "/usr/sbin/runc"
DEBIAN_MIRROR = os.environ.get("MINIKAFKA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PREFIX = "minikafka-test-"


def missing_tools() -> str | None:
    """Why the container tests cannot run here, or None."""
    if shutil.which("podman") is None:
        return "podman is not installed (apt-get install podman runc debootstrap)"
    if os.geteuid() != 0:
        return "the container tests build a base image with debootstrap and need root"
    if sys.version_info[:2] != (3, 11):
        return f"the host's wheels must match the image's Python 3.11; this is {sys.version.split()[0]}"
    if not image_exists(BASE_IMAGE) and shutil.which("debootstrap") is None:
        return "debootstrap is not installed and the base image is not cached"
    return None


def podman_command(*args: str) -> list[str]:
    runtime = ["--runtime", RUNC] if os.path.exists(RUNC) else []
    return ["podman", *runtime, *args]


def ulimits() -> list[str]:
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = 65536 if nofile == resource.RLIM_INFINITY else min(nofile, 65536)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", "nproc=4096:4096"]


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(podman_command(*args), capture_output=True, text=True, errors="replace", timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(result.args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def image_exists(name: str) -> bool:
    return subprocess.run(podman_command("image", "exists", name), capture_output=True).returncode == 0


@contextmanager
def _lock(name: str) -> Iterator[None]:
    with open(Path(tempfile.gettempdir()) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_base_image() -> str:
    """The python:3.11-slim stand-in: Debian bookworm's python3 with venv and pip, Debian's externally-managed
    marker dropped (as the official image has none). About a minute the first time; cached by tag after."""
    with _lock("minikafka-container-base"):
        if image_exists(BASE_IMAGE):
            return BASE_IMAGE
        with tempfile.TemporaryDirectory(prefix="minikafka-rootfs-") as scratch:
            rootfs = Path(scratch) / "rootfs"
            result = subprocess.run(
                ["debootstrap", "--variant=minbase", "--include=python3,python3-venv,python3-pip", "bookworm",
                 str(rootfs), DEBIAN_MIRROR], capture_output=True, text=True, timeout=900)
            if result.returncode != 0:
                raise AssertionError(f"debootstrap failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
            (rootfs / "usr/lib/python3.11/EXTERNALLY-MANAGED").unlink(missing_ok=True)
            for cache in (rootfs / "var/cache/apt/archives", rootfs / "var/lib/apt/lists"):
                for entry in cache.glob("*"):
                    if entry.is_file():
                        entry.unlink()
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            assert tar.stdout is not None
            imported = subprocess.run(
                podman_command("import", "--change", 'CMD ["python3"]', "--change",
                               f"LABEL {STAND_IN_LABEL}=debootstrap-bookworm", "-", BASE_IMAGE),
                stdin=tar.stdout, capture_output=True, text=True, timeout=300)
            tar.stdout.close()
            assert tar.wait() == 0 and imported.returncode == 0, imported.stderr
    return BASE_IMAGE


def build_wheels(directory: Path) -> Path:
    """Wheels of the project's dependencies and of its build backend, made by the host's pip (its cache, its
    certificate authorities); the project itself is left out so that the image builds it from its own context."""
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                             "--wheel-dir", str(directory), str(REPO), "setuptools>=77"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    for own in directory.glob("minikafka-*.whl"):
        own.unlink()
    return directory


def build_image(wheels: Path, dockerfile: Path = DOCKERFILE, tag: str = IMAGE) -> subprocess.CompletedProcess[str]:
    """`podman build` of the repository with docker/Dockerfile (Docker's image format: it keeps HEALTHCHECK)."""
    return podman("build", "--pull=never", "--format", "docker", *ulimits(), "--file", str(dockerfile),
                  "--build-arg", f"PYTHON_IMAGE={ensure_base_image()}", "--build-arg", "WHEELS_DIR=/wheels",
                  "--volume", f"{wheels}:/wheels:ro", "--tag", tag, str(REPO), check=False, timeout=900)


def inspect(name: str, kind: str = "container") -> dict[str, Any]:
    (info,) = json.loads(podman(kind, "inspect", name).stdout)
    result: dict[str, Any] = info
    return result


def run_container(name: str, image: str, *, env: dict[str, str], publish: Sequence[str] = (),
                  volume: str | None = None, network: str | None = None, aliases: Sequence[str] = ()) -> str:
    args = ["run", "--detach", "--name", name, *ulimits()]
    for mapping in publish:
        args += ["--publish", mapping]
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    if volume:
        args += ["--volume", f"{volume}:/var/lib/minikafka"]
    if network:
        args += ["--network", network, *(f"--network-alias={alias}" for alias in aliases)]
    podman(*args, image)
    return name


def logs(name: str) -> str:
    result = podman("logs", name, check=False)
    return result.stdout + result.stderr


def wait_healthy(name: str, timeout_s: float = 60) -> None:
    """Until the image's HEALTHCHECK passes (`podman healthcheck run`; no systemd timers here to run it)."""
    deadline = time.monotonic() + timeout_s
    while podman("healthcheck", "run", name, check=False).returncode != 0:
        state = inspect(name)["State"]
        assert state["Running"], f"{name} exited {state['ExitCode']}:\n{logs(name)}"
        assert time.monotonic() < deadline, f"{name} not healthy after {timeout_s}s:\n{logs(name)}"
        time.sleep(0.5)


def remove(*, containers: Sequence[str] = (), volumes: Sequence[str] = (), networks: Sequence[str] = ()) -> None:
    for name in containers:
        podman("rm", "--force", "--volumes", "--time", "0", name, check=False)
    for name in volumes:
        podman("volume", "rm", "--force", name, check=False)
    for name in networks:
        podman("network", "rm", "--force", name, check=False)
