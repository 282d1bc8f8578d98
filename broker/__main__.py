"""The `minikafka` command: `minikafka serve [--config FILE] [--override key=value ...] [--add-scram ARG ...]`
(`--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'` stores a SCRAM credential in the log dir before
the broker serves, with the syntax of `kafka-storage format --add-scram`) and
`minikafka compact TOPIC [--partition N] [--wait] [--admin-url URL] [--admin-user U --admin-password P]` (asks a
running broker to clean now through `POST /admin/compact` on its metrics/admin port and prints what was removed;
the credentials, also from MINIKAFKA_ADMIN_USER/MINIKAFKA_ADMIN_PASSWORD, are needed once the broker has security),
`minikafka erase` (broker/erase_cli.py) and `minikafka faults` (wire-level faults for tests:
broker/faults/fault_cli.py).

Further subcommands (`snapshot`, `audit` from minikafka.pipeline) come from the `minikafka.commands` entry points:
each is a `register(subparsers)` that adds its parser with a `handler`; the broker never imports them."""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from minikafka.protocol.package_init import defer_package_init

if __name__ == "__main__":
    # `python -m minikafka.broker` (MiniKafka's child): no cyclic-garbage collection while the imports below build
    # modules, classes and tables that all live on (the collector's passes over them cost a few % of the CPU to the
    # first Metadata, bench/startup.py); main() ends the pause. An importer of this module keeps its collector.
    gc.disable()

# Before the imports below reach them: the broker uses kafka-python's and aiokafka's protocol and record modules and
# prometheus_client's metric classes, not the clients and HTTP exposition their __init__ import, and crc32c's extension,
# not the version lookup (importlib.metadata) of its __init__ (protocol/package_init.py;
# tests/broker/test_startup_imports.py guards the start path).
defer_package_init("kafka", "aiokafka", "aiokafka.record", "prometheus_client", "crc32c",
                   # each re-exports all its modules' message classes; the broker imports a class's own module at
                   # its API's first request (protocol/messages.py)
                   "kafka.protocol.producer", "kafka.protocol.metadata", "kafka.protocol.consumer")

from minikafka.broker.config import KafkaConfig, load_properties  # noqa: E402
from minikafka.broker.log_dir_lock import LogDirLock  # noqa: E402
from minikafka.broker.malloc_tuning import keep_freed_memory  # noqa: E402
from minikafka.broker.server import KafkaServer  # noqa: E402
from minikafka.broker.speedups import warn_missing_speedups  # noqa: E402
from minikafka.broker.startup_error import StartupError  # noqa: E402
from minikafka.protocol.codegen_cache import install_codegen_cache  # noqa: E402
from minikafka.protocol.errors import KafkaError  # noqa: E402

log = logging.getLogger("minikafka")


def _parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise SystemExit(f"--override expects key=value, got {pair!r}")
        overrides[key.strip()] = value.strip()
    return overrides


def _resume_gc() -> None:
    """End the import-time pause of the garbage collector (`python -m minikafka.broker`): what the imports built is
    moved to the permanent generation (`gc.freeze`: later collections do not scan it again), then collection resumes
    for everything the command does."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


async def _serve(config: KafkaConfig) -> None:
    server = KafkaServer(config)
    try:
        await server.startup()
    except BaseException:
        if server.log_manager.started:  # a failure after the logs were opened: close them as a shutdown does
            await server.shutdown()
        raise
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.shutdown()


def _read_config_file(path: Path) -> dict[str, str]:
    try:
        return load_properties(path)
    except FileNotFoundError:
        raise StartupError("--config", path, "no such file",
                           "pass an existing server.properties (the repository has config/server.properties)") from None
    except IsADirectoryError:
        raise StartupError("--config", path, "is a directory", "pass a server.properties file") from None
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise StartupError("--config", path, f"cannot be read ({reason})", "pass a readable UTF-8 file") from None


def serve(args: argparse.Namespace) -> int:
    """Exit 0 after a clean shutdown; 2 for an invalid configuration, 1 for another start-up mistake (a port in
    use, a log dir that cannot be created or that another broker holds): one line, no traceback."""
    try:
        props: dict[str, str] = {}
        if args.config is not None:
            props.update(_read_config_file(Path(args.config)))
        props.update(_parse_overrides(args.override))
        if args.brokers is not None:
            props["minikafka.brokers"] = str(args.brokers)
        config = KafkaConfig(props)
    except StartupError as error:
        log.error("%s", error)
        return 2
    except KafkaError as error:
        log.error("invalid configuration: %s", error.message or error)
        return 2
    try:
        # Kafka's first step in a log dir: nothing in it is read or written before the lock is held.
        log_dir_lock = LogDirLock.acquire(config.log_dir)
    except StartupError as error:
        log.error("%s", error)
        return 1
    install_codegen_cache()  # kafka-python's generated codecs, compiled once per machine (protocol/codegen_cache.py)
    try:
        return _serve_locked(config, args.add_scram)
    finally:
        log_dir_lock.release()


def _serve_locked(config: KafkaConfig, add_scram: list[str]) -> int:
    if add_scram and not _add_scram(config, add_scram):
        return 2
    keep_freed_memory()
    warn_missing_speedups()
    try:
        import uvloop
    except ImportError:
        run = asyncio.run
    else:
        run = uvloop.run
    try:
        run(_serve(config))
    except StartupError as error:  # a listener or the admin port cannot bind
        log.error("%s", error)
        return 1
    except KafkaError as error:  # found at startup: an unreadable key store, a SASL listener without mechanisms
        log.error("invalid configuration: %s", error.message or error)
        return 2
    return 0


def _add_scram(config: KafkaConfig, arguments: list[str]) -> bool:
    """Store each `--add-scram` credential in the log dir (replacing the user's credential of that mechanism)."""
    from minikafka.broker.security.scram_credentials import ScramCredentialStore
    from minikafka.broker.security.scram_parser import parse_add_scram

    try:
        parsed = [parse_add_scram(argument) for argument in arguments]
        store = ScramCredentialStore.load(config.log_dir)
        for user, mechanism, credential in parsed:
            store.upsert(user, mechanism, credential)
            log.info("SCRAM credential for user %s (%s, %d iterations) stored", user, mechanism.mechanism_name,
                     credential.iterations)
    except ValueError as error:
        log.error("--add-scram: %s", error)
        return False
    except KafkaError as error:
        log.error("--add-scram: %s", error.message or error)
        return False
    return True


def compact(args: argparse.Namespace) -> int:
    """Exit 0 when the broker accepted (and, with --wait, finished) the compaction; 1 otherwise."""
    from minikafka.broker.admin_client import credentials_from_args, with_credentials

    try:
        credentials = credentials_from_args(args)
    except ValueError as error:
        print(f"minikafka compact: {error}", file=sys.stderr)
        return 2
    if args.exact:
        return _exact_compaction(args)
    query: dict[str, str] = {"topic": args.topic}
    if args.partition is not None:
        query["partition"] = str(args.partition)
    if args.wait:
        query["wait"] = "true"
        query["timeout_ms"] = str(int(args.timeout * 1000))
    import urllib.error
    import urllib.parse
    import urllib.request

    url = f"{args.admin_url.rstrip('/')}/admin/compact?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, data=b"", method="POST", headers=with_credentials({}, credentials))
    try:
        with urllib.request.urlopen(request, timeout=args.timeout + 30) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except OSError as error:
        print(f"minikafka compact: cannot reach {args.admin_url}: {error}", file=sys.stderr)
        return 1
    if status in (401, 403):
        print(f"minikafka compact: HTTP {status} from {args.admin_url}: {body.decode(errors='replace').strip()}"
              + (" (pass --admin-user/--admin-password or set MINIKAFKA_ADMIN_USER/MINIKAFKA_ADMIN_PASSWORD)"
                 if status == 401 else ""), file=sys.stderr)
        return 1
    try:
        result = json.loads(body)
    except ValueError:
        print(f"minikafka compact: HTTP {status}: {body.decode(errors='replace').strip()}", file=sys.stderr)
        return 1
    if status >= 400:
        print(f"minikafka compact: {result.get('error', result)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    if not result.get("done"):
        print(f"compaction of {args.topic} requested (not waiting; use --wait for the result)")
        return 0
    for entry in result["results"]:
        print(f"{entry['topic']}-{entry['partition']}: {entry['status']}, {entry['rounds']} round(s), "
              f"removed {entry['records_removed']} records / {entry['bytes_removed']} bytes"
              + (f" ({entry['error']})" if entry.get("error") else ""))
    print(f"total removed: {result['records_removed']} records, {result['bytes_removed']} bytes")
    return 0 if all(e["status"] in ("cleaned", "nothing_to_clean") for e in result["results"]) else 1


BUILT_IN_COMMANDS = ("serve", "compact", "erase", "faults")


class _DefaultsHelpFormatter(argparse.HelpFormatter):
    """Appends `(default: X)` to an option's help when it has a real default its help does not already name."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        default = action.default
        if ("default" in help_text or default in (None, False, [], argparse.SUPPRESS)
                or action.option_strings == [] or isinstance(default, bool)):
            return action.help
        return f"{help_text} (default: %(default)s)"


def _version() -> str:
    """The installed distribution's version, as `pip show minikafka` reports it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("minikafka")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
EXACT_COMPACTION_GROUP = "minikafka.exact_compaction"


def _exact_compaction(args: argparse.Namespace) -> int:
    """`--exact` plans on Spark: the planner is the pipeline's, found by entry point (the `[spark]` extra)."""
    from importlib.metadata import entry_points

    planners = list(entry_points(group=EXACT_COMPACTION_GROUP))
    if not planners:
        print("minikafka compact --exact: no planner installed; install the Spark extra from your clone of "
              "minikafka: pip install './minikafka[spark]' (minikafka is not on a package index)", file=sys.stderr)
        return 2
    exit_code: int = planners[0].load()(args)
    return exit_code


class _VersionAction(argparse.Action):
    """`--version`, with the version read only when asked (importlib.metadata would cost every `serve` start)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _register_plugin_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from importlib.metadata import entry_points

    for entry_point in entry_points(group="minikafka.commands"):
        entry_point.load()(commands)


class _ServeOnlyParseError(Exception):
    """A mistake on a `serve` command line found by the serve-only parser: the full parser reports it."""


class _ServeOnlyParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ServeOnlyParseError(message)


def _parser(*, serve_only: bool = False, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command line's parser. `serve_only`: just the `serve` subcommand (building every subcommand's parser,
    the faults CLI's dozen among them, cost ~10 ms of each start: argparse looks up translations and the terminal
    size per argument); its errors raise `_ServeOnlyParseError` so that main() reparses with the full parser,
    whose messages (usage lines listing every command) stay what they were."""
    parser_class = _ServeOnlyParser if serve_only else argparse.ArgumentParser
    parser = parser_class(prog="minikafka", description="A single-node Kafka-compatible broker",
                          formatter_class=_DefaultsHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True)
    # Every subcommand's --help shows its defaults (the plugin commands' parsers get the same formatter).
    commands.add_parser = functools.partial(  # type: ignore[method-assign]
        commands.add_parser, formatter_class=_DefaultsHelpFormatter)
    serve_parser = commands.add_parser("serve", help="run the broker")
    serve_parser.add_argument("--config", help="a server.properties file")
    serve_parser.add_argument(
        "--brokers", type=int, default=None, metavar="N",
        help="run N brokers in this process (minikafka.brokers; ids node.id.., broker k on each listener's port + k-1)")
    serve_parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="override one property"
    )
    serve_parser.add_argument(
        "--add-scram", action="append", default=[], metavar="MECHANISM=[name=USER,password=PASSWORD]",
        help="store a SCRAM credential before serving, as kafka-storage format --add-scram "
             "(e.g. 'SCRAM-SHA-256=[name=admin,password=admin-secret]'; also iterations=, salt=, saltedpassword=)",
    )
    if serve_only:
        return parser
    from minikafka.broker.admin_client import add_admin_credential_options
    from minikafka.broker.erase_cli import register as register_erase
    from minikafka.broker.faults.fault_cli import register as register_faults

    compact_parser = commands.add_parser("compact", help="ask a running broker to compact a topic now")
    compact_parser.add_argument("topic")
    compact_parser.add_argument("--partition", type=int, help="only this partition (default: all)")
    compact_parser.add_argument("--wait", action="store_true", help="wait for the result and print it")
    compact_parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait (with --wait)")
    compact_parser.add_argument("--json", action="store_true", help="print the broker's JSON reply")
    compact_parser.add_argument("--admin-url", default="http://127.0.0.1:9404",
                                help="the broker's metrics/admin HTTP address (minikafka.metrics.port)")
    add_admin_credential_options(compact_parser)
    register_erase(commands)
    register_faults(commands)
    exact = compact_parser.add_argument_group(
        "exact compaction", "plan on Spark which record of every key survives, then apply the plan in one round "
        "(any key count, no hash collisions; needs the [spark] extra)")
    exact.add_argument("--exact", action="store_true", help="compute a retained-offset plan on Spark")
    exact.add_argument("--bootstrap-servers", default="127.0.0.1:9092", help="with --exact: where Spark reads")
    exact.add_argument("--master", help="with --exact: Spark master URL (default: local[*])")
    exact.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="with --exact: Spark setting")
    exact.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                       help="with --exact: an option of Spark's Kafka source")
    if not argv or argv[0] not in BUILT_IN_COMMANDS:  # `serve` starts without scanning entry points
        _register_plugin_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    _resume_gc()
    argv = sys.argv[1:] if argv is None else argv
    args = None
    if argv and argv[0] == "serve":
        try:
            args = _parser(serve_only=True).parse_args(argv)
        except _ServeOnlyParseError:
            pass  # the full parser below reports it
    if args is None:
        args = _parser(argv=argv).parse_args(argv)
    if getattr(args, "handler", None) is not None:
        exit_code: int = args.handler(args)
        return exit_code
    if args.command == "compact":
        return compact(args)
    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)", stream=sys.stderr
    )
    if args.command == "serve":
        return serve(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
