"""The reference pages, generated from the code at build time so they cannot drift from it.

`config_tables()`, `cli_commands()`, `broker_metrics()` and `api_versions()` read what the code defines: every
`ConfigDef` table of the installed packages (broker, topic and any other level), the `minikafka` argparse parser
with the entry-point subcommands, the Prometheus registry of a broker started for a moment on loopback, and
`SUPPORTED_VERSIONS` as ApiVersions advertises it. The `*_page()` functions render them as Markdown; `gen_pages.py`
(run by mkdocs-gen-files during `mkdocs build`) writes them into the site, and tests/test_docs.py checks that every
key, option and metric the code defines is on its page. Nothing here is imported by the packages.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import pkgutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The packages whose modules may declare config tables (pipeline is left out: it imports nothing of its own
#: configuration, and scanning it would import PySpark's helpers).
CONFIG_PACKAGES = ("minikafka.protocol", "minikafka.storage", "minikafka.cleaner", "minikafka.broker")


# ----------------------------------------------------------------------------------------------------- configs
@dataclass(frozen=True)
class ConfigRow:
    """One documented config key."""

    name: str
    type: str
    default: str
    valid_values: str
    dynamic: str
    doc: str


@dataclass(frozen=True)
class ConfigTable:
    """The keys of one level (broker, topic, ...) as the reference page lists them."""

    title: str
    intro: str
    rows: tuple[ConfigRow, ...]


def _import_all(packages: tuple[str, ...]) -> list[Any]:
    modules = []
    for package_name in packages:
        package = importlib.import_module(package_name)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, package_name + "."):
            if info.name.endswith("__main__"):
                continue
            modules.append(importlib.import_module(info.name))
    return modules


def discover_config_defs() -> dict[str, Any]:
    """Every module-level `ConfigDef` of the packages, by `module.NAME` (a new table is found without edits)."""
    from minikafka.storage.config_def import ConfigDef

    found: dict[str, Any] = {}
    seen: set[int] = set()
    for module in _import_all(CONFIG_PACKAGES):
        for attribute, value in vars(module).items():
            if isinstance(value, ConfigDef) and id(value) not in seen:
                seen.add(id(value))
                found[f"{module.__name__}.{attribute}"] = value
    return found


def describe_validator(validator: Any) -> str:
    """The rule of one of `storage.config_def`'s validator factories, read from its closure; else its doc."""
    if validator is None:
        return ""
    allowed_items = getattr(validator, "allowed", None)  # storage.config_def.ValidList
    if allowed_items is not None:
        return "a list of " + ", ".join(allowed_items)
    free = dict(zip(validator.__code__.co_freevars,
                    (cell.cell_contents for cell in validator.__closure__ or ()), strict=False))
    factory = validator.__qualname__.split(".<locals>")[0]
    if factory == "at_least":
        return f">= {_number(free['minimum'])}"
    if factory == "between":
        return f"[{_number(free['minimum'])}, {_number(free['maximum'])}]"
    if factory == "in_set":
        return "one of " + ", ".join(free["allowed"])
    doc = (validator.__doc__ or "").strip().splitlines()
    if doc:
        return doc[0]
    # a hand-written check: name it, with the tables of allowed strings it reads
    allowed = [f"{name}: {', '.join(value)}" for name in validator.__code__.co_names
               if isinstance(value := validator.__globals__.get(name), (tuple, list, frozenset))
               and value and all(isinstance(item, str) for item in value)]
    return f"checked by `{validator.__qualname__}`" + (f" ({'; '.join(allowed)})" if allowed else "")


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def format_default(key: Any) -> str:
    from minikafka.storage.config_def import format_value

    if not key.has_default:
        return "(required)"
    text = format_value(key, key.default) if not isinstance(key.default, list) else ",".join(key.default)
    if text is None:
        return "null"
    return text if text != "" else '""'


def _row(key: Any, dynamic: str, doc: str | None = None) -> ConfigRow:
    valid = describe_validator(key.validator)
    if not valid and key.type.name == "BOOLEAN":
        valid = "true, false"
    return ConfigRow(key.name, key.type.name, format_default(key), valid, dynamic,
                     doc if doc is not None else key.doc)


def config_tables() -> list[ConfigTable]:
    """Broker keys (every table `KafkaConfig` knows, plus the log.* defaults of topic configs), topic keys,
    then any other table found in the packages, each key with whether it can change at runtime."""
    from minikafka.broker import config as broker_config
    from minikafka.broker.dynamic_config import DYNAMIC_CONFIGS
    from minikafka.storage.config_def import ConfigKey
    from minikafka.storage.log_config import BROKER_SYNONYMS, TOPIC_CONFIG_DEF

    def broker_dynamic(name: str) -> str:
        return "yes (cluster default or per broker)" if name in DYNAMIC_CONFIGS else "no"

    broker_tables = list(broker_config._CONFIG_TABLES)
    broker_rows: dict[str, ConfigRow] = {}
    for table in broker_tables:
        for key in table.keys.values():
            broker_rows.setdefault(key.name, _row(key, broker_dynamic(key.name)))
    for topic_name, synonyms in BROKER_SYNONYMS.items():
        topic_key = TOPIC_CONFIG_DEF.keys[topic_name]
        for broker_name, factor in synonyms:
            if broker_name in broker_rows:
                continue
            unit = {1: "", 60_000: " (minutes)", 3_600_000: " (hours)"}[factor]
            default_key = topic_key
            if factor != 1:  # log.retention.hours and friends: Kafka's defaults are only in the ms key
                default_key = ConfigKey(broker_name, topic_key.type, None, None, topic_key.doc)
            broker_rows[broker_name] = _row(
                ConfigKey(broker_name, topic_key.type, default_key.default, topic_key.validator),
                broker_dynamic(broker_name),
                f"Default of the topic config `{topic_name}`{unit}. {topic_key.doc}")
    tables = [
        ConfigTable(
            "Broker configs",
            "Set in `server.properties` or with `minikafka serve --override key=value`. Keys marked dynamic "
            "change at runtime with `kafka-configs --alter --entity-type brokers` (see Operations). The `log.*` "
            "keys at the end of the table are the defaults of the topic configs below.",
            tuple(sorted(broker_rows.values(), key=lambda row: row.name))),
        ConfigTable(
            "Topic configs",
            "Set when a topic is created or later with `kafka-configs --alter --entity-type topics` "
            "(AlterConfigs / IncrementalAlterConfigs); a topic without an override takes the broker's `log.*` "
            "synonym, then the default shown here.",
            tuple(_row(key, "yes (per topic)") for key in TOPIC_CONFIG_DEF.keys.values())),
    ]
    known = {id(table) for table in broker_tables} | {id(TOPIC_CONFIG_DEF)}
    for qualified_name, table in sorted(discover_config_defs().items()):
        if id(table) in known:
            continue
        module_name, _, attribute = qualified_name.rpartition(".")
        tables.append(ConfigTable(
            f"Other configs: `{attribute}`",
            f"Declared in `{module_name}`.",
            tuple(_row(key, "see the module") for key in table.keys.values())))
    return tables


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def configs_page() -> str:
    lines = ["# Configuration reference", "",
             "Generated from the config definitions (`ConfigDef` tables) when the site is built. Names, types "
             "and defaults are Apache Kafka's wherever Kafka has the key; `minikafka.*` keys are this broker's "
             "own. Unknown broker keys are logged and ignored, as Kafka does; a bad value stops the broker with "
             "the key, the value and the rule (or answers INVALID_CONFIG over the wire).", ""]
    for table in config_tables():
        lines += [f"## {table.title}", "", table.intro, "",
                  "| key | type | default | valid values | dynamic | description |", "|---|---|---|---|---|---|"]
        for row in table.rows:
            lines.append(f"| `{row.name}` | {row.type} | `{_cell(row.default)}` | {_cell(row.valid_values)} | "
                         f"{row.dynamic} | {_cell(row.doc)} |")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------- CLI
class _ParserCaptured(BaseException):  # not Exception: main() may catch that around parse_args
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("parser captured")
        self.parser = parser


def minikafka_parser() -> argparse.ArgumentParser:
    """The `minikafka` command's parser with every entry-point subcommand registered.

    `broker.__main__` builds its parser inside `main()`; a `build_parser()` there is used when it exists,
    otherwise `main()` is run with a command name that is not built in (so the entry points are registered) and
    the parser is taken at its first `parse_args`, before anything runs."""
    from minikafka.broker import __main__ as cli

    build = getattr(cli, "build_parser", None)
    if build is not None:
        parser: argparse.ArgumentParser = build(register_plugins=True) if _accepts_plugins(build) else build()
        return parser

    def capture(self: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> Any:
        raise _ParserCaptured(self)

    original = argparse.ArgumentParser.parse_known_args
    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign,assignment]
    try:
        cli.main(["--minikafka-docs-capture"])
    except _ParserCaptured as captured:
        return captured.parser
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]
    raise RuntimeError("minikafka's main() returned without parsing its arguments")


def _accepts_plugins(function: Any) -> bool:
    import inspect

    return "register_plugins" in inspect.signature(function).parameters


@dataclass(frozen=True)
class CliOption:
    flags: tuple[str, ...]
    metavar: str
    default: str
    help: str
    group: str


@dataclass(frozen=True)
class CliCommand:
    name: str
    help: str
    usage: str
    options: tuple[CliOption, ...]


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                yield name, subparser, helps.get(name, "")


def _options(parser: argparse.ArgumentParser) -> tuple[CliOption, ...]:
    group_of = {id(action): group.title or "" for group in parser._action_groups for action in group._group_actions}
    options = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flags = tuple(action.option_strings) or (action.dest,)
        if action.nargs == 0:
            metavar = ""
        else:
            metavar = action.metavar if isinstance(action.metavar, str) else (
                action.dest.upper() if action.option_strings else "")
        default = "" if action.default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0 else \
            str(action.default)
        help_text = (action.help or "") % {"default": action.default} if action.help else ""
        if action.required and action.option_strings:
            help_text = "required. " + help_text
        group = group_of.get(id(action), "")
        options.append(CliOption(flags, metavar, default, help_text,
                                 "" if group in ("options", "optional arguments", "positional arguments") else group))
    return tuple(options)


def cli_commands() -> list[CliCommand]:
    """Every command, a command's own subcommands (`faults set-rtt`) right after it."""
    return list(_commands(minikafka_parser(), ""))


def _commands(parser: argparse.ArgumentParser, prefix: str) -> Iterator[CliCommand]:
    for name, subparser, help_text in _subcommands(parser):
        usage = " ".join(subparser.format_usage().split()).removeprefix("usage: ")
        yield CliCommand(prefix + name, help_text, usage, _options(subparser))
        yield from _commands(subparser, f"{prefix}{name} ")


class _OptionRecorder:
    """Stands in for pytest's `Parser` and its option groups while the plugin's `pytest_addoption` declares its
    options and ini keys: it records what is declared (pytest offers no public way to build a Parser)."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.ini: list[tuple[str, str, str]] = []

    def getgroup(self, *_args: Any, **_kwargs: Any) -> _OptionRecorder:
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.options.append((names, attrs))

    def addini(self, name: str, help: str, type: str | None = None, **_kwargs: Any) -> None:
        self.ini.append((name, type or "string", help))


def pytest_plugin_options() -> _OptionRecorder:
    """The options and ini keys of the minikafka pytest plugin (the `pytest11` entry point)."""
    from minikafka.testing import pytest_plugin

    recorder = _OptionRecorder()
    pytest_plugin.pytest_addoption(recorder)  # type: ignore[arg-type]
    return recorder


def cli_page() -> str:
    lines = ["# Command-line reference", "",
             "Generated from the `minikafka` command's argument parser when the site is built, including the "
             "subcommands other packages register through the `minikafka.commands` entry points (`snapshot` and "
             "`audit` come from `minikafka.pipeline`; they need the `[spark]` extra to run). "
             "`minikafka COMMAND --help` prints the same.", ""]
    for command in cli_commands():
        lines += [f"## `minikafka {command.name}`", "", command.help[:1].upper() + command.help[1:] + ".", "",
                  "```text", command.usage, "```", "",
                  "| option | value | default | description |", "|---|---|---|---|"]
        for option in command.options:
            flags = ", ".join(f"`{flag}`" for flag in option.flags)
            help_text = (f"*{option.group}:* " if option.group else "") + option.help
            lines.append(f"| {flags} | {_cell(option.metavar)} | {_cell(option.default)} | {_cell(help_text)} |")
        lines.append("")
    plugin = pytest_plugin_options()
    lines += ["## pytest plugin options", "",
              "The `minikafka` pytest plugin (installed with the package) adds these options to `pytest`, and the "
              "ini keys to the `[pytest]` section; see [Testing with minikafka](../testing.md).", "",
              "| option | value | description |", "|---|---|---|"]
    for names, attrs in plugin.options:
        lines.append(f"| {', '.join(f'`{name}`' for name in names)} | {_cell(attrs.get('metavar') or '')} | "
                     f"{_cell(attrs.get('help') or '')} |")
    lines += ["", "| ini key | type | description |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {_cell(help_text)} |" for name, kind, help_text in plugin.ini]
    lines.append("")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class MetricRow:
    name: str
    type: str
    labels: tuple[str, ...]
    help: str


def _sample_name(family_name: str, family_type: str) -> str:
    return family_name + "_total" if family_type == "counter" else family_name


async def _broker_metric_families(log_dir: str) -> list[Any]:
    from minikafka.broker.config import KafkaConfig
    from minikafka.broker.server import KafkaServer

    server = KafkaServer(KafkaConfig({"log.dirs": log_dir, "listeners": "PLAINTEXT://127.0.0.1:0",
                                      "minikafka.metrics.port": "0", "log.cleaner.enable": "false"}))
    await server.startup()
    try:
        server.metrics.publish_loop_snapshots()  # as a scrape does first
        return list(server.metrics.registry.collect())
    finally:
        await server.shutdown()


def broker_metrics() -> list[MetricRow]:
    """Every family of a broker's registry: a broker is started on loopback ports in a temporary log dir and
    stopped again (metrics registered at startup are included; labels come from the families' declarations)."""
    with tempfile.TemporaryDirectory(prefix="minikafka-docs-") as log_dir:
        families = asyncio.run(_broker_metric_families(log_dir))
    rows = []
    for family in families:
        labels = _declared_labels(family)
        rows.append(MetricRow(_sample_name(family.name, family.type), family.type, labels, family.documentation))
    return sorted(rows, key=lambda row: row.name)


def _declared_labels(family: Any) -> tuple[str, ...]:
    names: list[str] = []
    for sample in family.samples:
        for label in sample.labels:
            if label not in names and label not in ("le", "quantile"):
                names.append(label)
    return tuple(names)


def metrics_page() -> str:
    lines = ["# Metrics reference", "",
             "Generated from the Prometheus registry of a broker started for the build. Scrape "
             "`GET /metrics` on `minikafka.metrics.port` (default 9404, bound to `minikafka.metrics.host`, "
             "127.0.0.1). Names follow what the Prometheus JMX exporter produces for Apache Kafka's MBeans "
             "(`kafka_*`), so dashboards carry over; `minikafka_*` metrics are this broker's own. Per-topic and "
             "per-partition families carry `topic` and `partition` labels; see Operations for what to alert on.",
             "", "| metric | type | help |", "|---|---|---|"]
    for row in broker_metrics():
        lines.append(f"| `{row.name}` | {row.type} | {_cell(row.help)} |")
    lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ API versions
def api_versions() -> list[tuple[int, str, int, int, str]]:
    """(key, name, min, max, note) for every API ApiVersions advertises, in key order."""
    from minikafka.protocol import api_keys

    refused = getattr(api_keys, "ADVERTISED_ONLY", {})
    rows = []
    for key, (low, high) in sorted(api_keys.SUPPORTED_VERSIONS.items()):
        note = ""
        if key in refused:
            r_low, r_high = refused[key]
            note = f"v{r_low}-v{r_high} advertised but refused (the connection is closed), as Kafka 4 does"
        name = "".join(part.title() for part in key.name.split("_"))
        rows.append((int(key), name, low, high, note))
    return rows


def features() -> dict[str, tuple[int, int]]:
    from minikafka.broker.features import BrokerFeatures

    with contextlib.suppress(Exception):
        return dict(BrokerFeatures.for_transaction_version(2).supported_for(4))
    return {}


def api_versions_page() -> str:
    lines = ["# API versions", "",
             "Generated from `minikafka.protocol.api_keys.SUPPORTED_VERSIONS`, the table the ApiVersions handler "
             "advertises (a client picks the highest version both sides support). Every request is decoded and "
             "encoded with the message classes generated from Kafka's own JSON schemas, in every listed version "
             "including the flexible ones.", "",
             "| key | API | min | max | note |", "|---:|---|---:|---:|---|"]
    for key, name, low, high, note in api_versions():
        lines.append(f"| {key} | {name} | {low} | {high} | {note} |")
    supported = features()
    if supported:
        lines += ["", "## Features (ApiVersions v3+)", "", "| feature | min | max |", "|---|---:|---:|"]
        for name, (low, high) in sorted(supported.items()):
            lines.append(f"| `{name}` | {low} | {high} |")
    lines.append("")
    return "\n".join(lines)


PAGES = {
    "reference/configs.md": configs_page,
    "reference/cli.md": cli_page,
    "reference/metrics.md": metrics_page,
    "reference/api-versions.md": api_versions_page,
}


def write_pages(out_dir: Path) -> None:
    """Write every reference page under `out_dir` (for reading them without building the site)."""
    for path, render in PAGES.items():
        target = out_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render())


if __name__ == "__main__":
    import sys

    write_pages(Path(sys.argv[1] if len(sys.argv) > 1 else "build/reference"))
