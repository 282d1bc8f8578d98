"""The `minikafka` command: `minikafka serve [--config FILE] [--override key=value ...]`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from broker.config import KafkaConfig, load_properties
from broker.server import KafkaServer
from protocol.errors import KafkaError

log = logging.getLogger("minikafka")


def _parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise SystemExit(f"--override expects key=value, got {pair!r}")
        overrides[key.strip()] = value.strip()
    return overrides


async def _serve(config: KafkaConfig) -> None:
    server = KafkaServer(config)
    await server.startup()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.shutdown()


def serve(args: argparse.Namespace) -> int:
    props: dict[str, str] = {}
    if args.config is not None:
        props.update(load_properties(Path(args.config)))
    props.update(_parse_overrides(args.override))
    try:
        config = KafkaConfig(props)
    except KafkaError as error:
        log.error("invalid configuration: %s", error.message or error)
        return 2
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux/macOS
        asyncio.run(_serve(config))
    else:
        uvloop.run(_serve(config))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minikafka", description="A single-node Kafka-compatible broker")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the broker")
    serve_parser.add_argument("--config", help="a server.properties file")
    serve_parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="override one property"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)", stream=sys.stderr
    )
    if args.command == "serve":
        return serve(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
