"""The docs site's generated reference pages list everything the code defines, and nothing in the repository
points outside it.

The pages come from docs/_gen/reference.py (run by mkdocs-gen-files in `make docs`); these tests find the same
things another way: every `ConfigDef` in any module of the packages, the options `minikafka COMMAND --help` prints,
the metric families a running broker serves on `/metrics`, and the API ranges its ApiVersions answers.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.storage.config_def import ConfigDef
from minikafka.storage.log_config import BROKER_SYNONYMS
from minikafka.testing import MiniKafka
from tests.wire_client import WireClient

REPO_ROOT = Path(__file__).resolve().parents[1]
MINIKAFKA = [sys.executable, "-m", "minikafka.broker"]


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    sys.path.insert(0, str(REPO_ROOT / "docs" / "_gen"))
    try:
        return importlib.import_module("reference")
    finally:
        sys.path.remove(str(REPO_ROOT / "docs" / "_gen"))


@pytest.fixture(scope="module")
def running_broker() -> Iterator[MiniKafka]:
    with MiniKafka({"log.cleaner.backoff.ms": 100}) as kafka:
        yield kafka


def _all_config_defs() -> list[ConfigDef]:
    tables: list[ConfigDef] = []
    for package_name in ("minikafka.protocol", "minikafka.storage", "minikafka.cleaner", "minikafka.broker"):
        package = importlib.import_module(package_name)
        for info in pkgutil.walk_packages(package.__path__, package_name + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            tables += [value for value in vars(module).values()
                       if isinstance(value, ConfigDef) and all(value is not t for t in tables)]
    return tables


def _section(page: str, heading: str) -> str:
    """The text of one `## heading` section of a page."""
    start = page.index(f"## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start:] if end < 0 else page[start:end]


def test_config_page_lists_every_key_of_every_config_table(reference: Any) -> None:
    page = reference.configs_page()
    listed = set(re.findall(r"^\| `([^`]+)` \|", page, re.MULTILINE))
    tables = _all_config_defs()
    assert len(tables) >= 10, "the scan should find the broker's config tables"
    declared = {name for table in tables for name in table.keys}
    declared |= {broker_name for synonyms in BROKER_SYNONYMS.values() for broker_name, _factor in synonyms}
    assert declared - listed == set()
    topic_section = _section(page, "Topic configs")
    assert "| `cleanup.policy` | LIST | `delete` | a list of compact, delete | yes (per topic) |" in topic_section
    assert "| `log.cleaner.threads` | INT | `1` | >= 0 | yes (cluster default or per broker) |" in page
    assert "| `node.id` | INT | `1` | >= 0 | no |" in page


def _help(*args: str) -> str:
    return subprocess.run([*MINIKAFKA, *args, "--help"], capture_output=True, text=True, check=True,
                          timeout=60).stdout


def test_cli_page_lists_every_command_and_option_that_help_prints(reference: Any) -> None:
    page = reference.cli_page()
    top = _help()
    commands = re.search(r"\{([a-z,_-]+)\}", top)
    assert commands is not None, top
    names = commands.group(1).split(",")
    assert {"serve", "compact", "snapshot", "audit"} <= set(names)
    for name in names:
        _assert_command_documented(page, name)
    plugin = _section(page, "pytest plugin options")
    pytest_help = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True,
                                 check=True, timeout=120, cwd=REPO_ROOT).stdout
    declared = set(re.findall(r"(--minikafka-[a-z-]+)", pytest_help)) | set(
        re.findall(r"^  (minikafka_\w+) \(", pytest_help, re.MULTILINE))
    assert len(declared) >= 4
    assert {name for name in declared if f"`{name}`" not in plugin} == set()


def _assert_command_documented(page: str, command: str) -> None:
    """`command`'s section lists every option its --help prints; a command with subcommands (`faults`) has a
    section of its own and one per subcommand."""
    help_text = _help(*command.split())
    section = _section(page, f"`minikafka {command}`")
    subcommands = re.search(r"^  \{([a-z,_-]+)\}$", help_text, re.MULTILINE)
    if subcommands is not None:
        for name in subcommands.group(1).split(","):
            _assert_command_documented(page, f"{command} {name}")
        return
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text)) - {"--help"}
    assert options, command
    missing = {option for option in options if f"`{option}`" not in section}
    assert missing == set(), f"minikafka {command}: {sorted(missing)} not on the CLI page"


def test_metrics_page_lists_every_family_a_running_broker_serves(reference: Any,
                                                                running_broker: MiniKafka) -> None:
    page = reference.metrics_page()
    with urllib.request.urlopen(running_broker.metrics_url, timeout=10) as response:
        text = response.read().decode()
    served = set()
    families = list(text_string_to_metric_families(text))
    for family in families:
        served.add(family.name + "_total" if family.type == "counter" else family.name)
    # prometheus_client serves a `_created` timestamp beside each counter and histogram; the parser reads it as a
    # family of its own
    served = {name for name in served if not (name.endswith("_created") and (
        name.removesuffix("_created") + "_total" in served or name.removesuffix("_created") in served))}
    assert len(served) >= 20
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", page, re.MULTILINE))
    assert served - listed == set()
    help_line = re.search(r"^# HELP kafka_log_log_size (.+)$", text, re.MULTILINE)
    assert help_line is not None and f"| `kafka_log_log_size` | gauge | {help_line.group(1)} |" in page


def test_api_versions_page_matches_what_the_broker_advertises(reference: Any, running_broker: MiniKafka) -> None:
    page = reference.api_versions_page()
    with WireClient(running_broker.bootstrap_servers) as client:
        response = client.request(ApiVersionsRequest[3](client_software_name="docs-test",
                                                        client_software_version="1.0"))
    assert response.error_code == 0
    rows = {int(key): (int(low), int(high))
            for key, low, high in re.findall(r"^\| (\d+) \| \w+ \| (\d+) \| (\d+) \|", page, re.MULTILINE)}
    advertised = {entry[0]: (entry[1], entry[2]) for entry in response.api_keys}
    assert rows == advertised


_RELATIVE_PATH = re.compile(r"(?:\.\./)+\w[\w./-]*")
_ABSOLUTE_WORK_PATH = re.compile(r"/work/[\w./-]+")


def _paths_outside_the_repository(name: str) -> list[str]:
    """`../` paths in one tracked file that leave the repository from the file's folder, and /work/ paths."""
    path = REPO_ROOT / name
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    found = [f"{name}: {match.group(0)}" for match in _ABSOLUTE_WORK_PATH.finditer(text)]
    for match in _RELATIVE_PATH.finditer(text):
        target = (path.parent / match.group(0)).resolve()
        if not target.is_relative_to(REPO_ROOT):
            found.append(f"{name}: {match.group(0)}")
    return found


def _tracked_files() -> list[str]:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True,
                             timeout=60).stdout.decode()
    return [name for name in listing.split("\0") if name]


LANDING_PAGE = "README.md"


def test_no_tracked_file_refers_to_a_path_outside_the_repository() -> None:
    offenders = [found for name in _tracked_files() for found in _paths_outside_the_repository(name)]
    assert offenders == []


_MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_landing_page_is_short_and_every_link_target_exists() -> None:
    text = (REPO_ROOT / LANDING_PAGE).read_text()
    assert len(text.splitlines()) <= 250
    assert text.index("make run") < text.index("make test") < 1500  # the two commands on the first screen
    targets = [target for target in _MARKDOWN_LINK.findall(text) if "://" not in target]
    assert len(targets) >= 10
    # docs/*.md pages are in the repository; the rest (DESIGN.md, BENCHMARKS.md) are files at the root
    missing = [target for target in targets if not (REPO_ROOT / target).is_file()]
    assert missing == []
    assert _paths_outside_the_repository(LANDING_PAGE) == []


# ------------------------------------------------------------------------------------------------- benchmarks
def _summary_goals(markdown: str) -> list[str]:
    """The first cells of the `## Summary` table."""
    section = markdown[markdown.index("## Summary"):]
    section = section[:section.find("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| goal")]
    return [row.split("|")[1].strip() for row in rows]


def test_benchmarks_md_is_curated_and_keeps_every_goal_of_the_old_summary() -> None:
    curated = (REPO_ROOT / "BENCHMARKS.md").read_text()
    history = (REPO_ROOT / "bench" / "results" / "HISTORY.md").read_text()
    assert len(curated.splitlines()) <= 500
    old_goals = _summary_goals(history)
    assert len(old_goals) == 22
    assert set(old_goals) <= set(_summary_goals(curated))
    assert "bench/results/HISTORY.md" in curated and "bench/results/results.jsonl" in curated


def test_every_goal_has_results_and_every_line_is_a_result() -> None:
    from bench.results_log import GOALS, RESULTS_FILE, load_results

    results = load_results(RESULTS_FILE)
    assert {item.goal for item in results} == set(GOALS)
    for item in results:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", item.timestamp), item
        assert item.command and item.machine and item.target == GOALS[item.goal][1]
        assert item.ratio is None or item.ratio > 0


def test_results_append_load_and_plot(tmp_path: Path) -> None:
    from bench import plot
    from bench.results_log import append_results, load_results, result

    path = tmp_path / "results.jsonl"
    first = [result("e2e-latency", "p99 latency, 1,000 msg/s of 200 B", 1.1, "ms", 1.9, command="python -m x",
                    timestamp="2026-11-25T10:00:00Z"),
             result("soak", "RSS trend over 30 min", 1.2, "MiB/h", command="python -m y",
                    timestamp="2026-11-25T10:00:00Z"),
             result("kill-loop", "violations after 1,000 kill -9s", 0, "violations", command="python -m z",
                    timestamp="2026-11-25T10:00:00Z")]
    assert append_results(first, path) == 3
    assert append_results([result("e2e-latency", "p99 latency, 1,000 msg/s of 200 B", 1.0, "ms", 2.0,
                                  command="python -m x", timestamp="2026-11-26T10:00:00Z")], path) == 1
    loaded = load_results(path)
    assert loaded[:3] == first and len(loaded) == 4
    assert loaded[0].ratio == pytest.approx(1.1 / 1.9, abs=1e-4) and loaded[1].ratio is None
    images = plot.render_plots(loaded)
    assert set(images) == {"e2e-latency.png", "soak.png"}  # a violation count is listed, not plotted
    assert all(png.startswith(b"\x89PNG") for png in images.values())
    page = plot.plots_markdown(loaded, image_dir="benchmarks")
    assert "![end-to-end latency" in page and "| kill -9 at scale (reliability) |" in page
    with pytest.raises(ValueError, match="unknown benchmark goal"):
        result("no-such-goal", "m", 1, "s")
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(ValueError, match=r"results.jsonl:5"):
        load_results(path)


def test_plot_command_writes_one_png_per_plotted_goal(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "bench.plot", "--out", str(tmp_path)], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    written = sorted(path.name for path in tmp_path.iterdir())
    assert "broker-cpu-throughput.png" in written and "e2e-latency.png" in written
    assert sorted(Path(line).name for line in completed.stdout.split()) == written
