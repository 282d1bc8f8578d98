"""The wheel built from this repository: everything installs under `minikafka.`, nothing as a top-level
`broker`/`protocol`/`storage`/`cleaner`/`testing`/`pipeline` module, and the console script, the pytest plugin
and the pipeline's CLI commands are declared.

Builds the wheel with pip (setuptools comes from the package index into pip's isolated build environment),
installs it without dependencies into a fresh virtualenv, and imports it there with the dependencies taken from
the test environment's site-packages (PYTHONPATH does not run the editable install's .pth hook, so the imports
can only resolve to the installed wheel).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_FOLDERS = ["protocol", "storage", "cleaner", "broker", "testing", "pipeline"]
FORBIDDEN_TOP_LEVEL = ["broker", "protocol", "storage", "cleaner", "testing", "pipeline"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the sources: setuptools reuses a checkout's build/ folder, which could hide a module
    that pyproject.toml no longer packages."""
    source = tmp_path_factory.mktemp("source")
    for name in ["pyproject.toml", "README.md"]:
        shutil.copy(REPO_ROOT / name, source / name)
    for folder in SOURCE_FOLDERS:
        shutil.copytree(REPO_ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "src", source / "src", symlinks=True)  # minikafka/<folder> -> ../../<folder>
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)],
        check=True, timeout=300,
    )
    (built,) = out.glob("minikafka-*.whl")
    return built


def test_the_wheel_holds_every_source_module_under_minikafka_and_nothing_at_the_top(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {"minikafka"}
    for folder in SOURCE_FOLDERS:
        sources = {
            f"minikafka/{path.relative_to(REPO_ROOT).as_posix()}"
            for path in (REPO_ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts
        }
        missing = sources - names
        assert not missing, f"pyproject.toml's package list misses {sorted(missing)}"
        assert f"minikafka/{folder}/py.typed" in names
    static = {f"minikafka/{path.relative_to(REPO_ROOT).as_posix()}"
              for path in (REPO_ROOT / "broker" / "console" / "static").iterdir()}
    assert static and static <= names, f"the console's static files are not package data: {sorted(static - names)}"


def test_the_wheel_declares_the_console_script_and_the_pytest_plugin(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
    text = archive.read(entry_points).decode()
    assert "minikafka = minikafka.broker.__main__:main" in text
    assert "[pytest11]" in text and "minikafka = minikafka.testing.pytest_plugin" in text
    assert "[minikafka.commands]" in text and "snapshot = minikafka.pipeline.cli:register_snapshot" in text


def test_a_fresh_virtualenv_imports_minikafka_from_the_wheel_and_no_bare_package_names(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True, timeout=300)
    site_packages = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    for name in FORBIDDEN_TOP_LEVEL:
        assert not (site_packages / name).exists() and not (site_packages / f"{name}.py").exists()

    dependencies = {"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin"}
    probe = (
        "import importlib.util, minikafka.broker, minikafka.broker.server, minikafka.testing;"
        "print(minikafka.broker.__file__);"
        "print([n for n in ('broker', 'protocol', 'storage', 'cleaner') if importlib.util.find_spec(n)])"
    )
    done = subprocess.run([str(python), "-c", probe], env=dependencies, capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    broker_file, bare_names = done.stdout.splitlines()
    assert Path(broker_file).is_relative_to(site_packages)
    assert bare_names == "[]"

    script = subprocess.run([str(env_dir / "bin" / "minikafka"), "--help"], env=dependencies,
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert script.returncode == 0 and "serve" in script.stdout, script.stderr
    assert "snapshot" in script.stdout and "audit" in script.stdout, "the pipeline's entry points were not found"


def test_the_editable_install_is_one_path_line_and_prints_nothing(tmp_path: Path) -> None:
    """What `make run` and `make test` install: the .pth file names src/ (the minikafka/<folder> links), and the
    build backend has nothing to say. pip shows a backend's warnings even with --quiet; setuptools warned for an
    editable install through an import hook and for the console's static folder missing from `packages`."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--editable", str(REPO_ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    assert (installed.stdout, installed.stderr) == ("", "")
    site_packages = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    (pth,) = site_packages.glob("__editable__.minikafka-*.pth")
    assert pth.read_text().splitlines() == [str(REPO_ROOT / "src")]
