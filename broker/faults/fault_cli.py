"""`minikafka faults SUBCOMMAND ... [--admin-url URL]`: set and clear a running broker's wire-level faults through
its admin port (the names of `MiniKafka.faults`, in kebab case):

    minikafka faults push-request-errors Produce NOT_LEADER_OR_FOLLOWER NOT_LEADER_OR_FOLLOWER [--broker 1]
                                         [--client-id ID]
    minikafka faults set-rtt 1 200
    minikafka faults disconnect-on OffsetCommit [--count 1] [--broker 1] [--client-id ID]
    minikafka faults blackhole CLIENT_ID
    minikafka faults clear-faults
    minikafka faults elect-leader TOPIC PARTITION ID
    minikafka faults pause-follower TOPIC PARTITION ID
    minikafka faults resume-follower TOPIC PARTITION ID
    minikafka faults stop-broker ID
    minikafka faults start-broker ID
    minikafka faults move-coordinator group|transaction|share KEY ID
    minikafka faults describe

Prints the faults in force as JSON. Exit 0 when set; 2 for a fault the broker refuses or bad arguments (one line
on stderr saying why); 1 when the admin port cannot be reached or refuses the credentials. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from minikafka.broker.admin_client import add_admin_credential_options, credentials_from_args
from minikafka.broker.faults.fault_client import AdminPortError, Faults


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "faults", help="inject wire-level faults into a running broker (tests)",
        description="Set and clear a running broker's wire-level faults through its admin port, for tests "
                    "(docs/testing-failures.md). The subcommands are MiniKafka.faults' methods in kebab case.")
    subcommands = parser.add_subparsers(dest="fault", required=True)

    def add(name: str, help_text: str, call: Callable[[Faults, argparse.Namespace], dict[str, Any]]
            ) -> argparse.ArgumentParser:
        sub = subcommands.add_parser(name, help=help_text)
        sub.add_argument("--admin-url", default="http://127.0.0.1:9404",
                         help="the broker's metrics/admin HTTP address (minikafka.metrics.port)")
        add_admin_credential_options(sub)
        sub.set_defaults(handler=run, call=call)
        return sub

    push = add("push-request-errors", "answer the next requests of an API with these errors, in order",
               lambda faults, args: faults.push_request_errors(args.api, *args.errors, broker=args.broker,
                                                               client_id=args.client_id))
    push.add_argument("api", help="Kafka's API name (Produce, OffsetCommit) or key number")
    push.add_argument("errors", nargs="+", metavar="error",
                      help="Kafka's error names (NOT_LEADER_OR_FOLLOWER) or codes")
    _add_request_filter(push)
    rtt = add("set-rtt", "hold every response of a broker back this long (0: no longer)",
              lambda faults, args: faults.set_rtt(args.id, args.ms))
    rtt.add_argument("id", help="the broker id")
    rtt.add_argument("ms", help="milliseconds")
    disconnect = add("disconnect-on", "serve the next requests of an API, then close the connection instead of "
                                      "answering", lambda faults, args: faults.disconnect_on(
                                          args.api, args.count, broker=args.broker, client_id=args.client_id))
    disconnect.add_argument("api", help="Kafka's API name (OffsetCommit, Produce) or key number")
    disconnect.add_argument("--count", default="1", help="how many requests (default 1)")
    _add_request_filter(disconnect)
    blackhole = add("blackhole", "leave requests from matching client ids unanswered until cleared",
                    lambda faults, args: faults.blackhole(args.client_id))
    blackhole.add_argument("client_id", help="requests from client ids containing this get no response")
    add("clear-faults", "end every fault", lambda faults, _args: faults.clear_faults())
    elect = add("elect-leader", "make an in-sync replica the leader of a partition",
                lambda faults, args: faults.elect_leader(args.topic, args.partition, args.id))
    elect.add_argument("topic")
    elect.add_argument("partition")
    elect.add_argument("id", help="the broker id of the new leader")
    for name, verb, action in (
            ("pause-follower", "stop a follower replica following: its log end offset is held, the high watermark "
             "waits, after replica.lag.time.max.ms it leaves the ISR", "pause_follower"),
            ("resume-follower", "let a paused follower catch up and rejoin the ISR", "resume_follower")):
        follower = add(name, verb, _follower_call(action))
        follower.add_argument("topic")
        follower.add_argument("partition")
        follower.add_argument("id", help="the broker id of the follower replica")
    stop = add("stop-broker", "close a broker's listeners and connections; its partitions elect new leaders",
               lambda faults, args: faults.stop_broker(args.id))
    stop.add_argument("id", help="the broker id")
    start = add("start-broker", "reopen a stopped broker's listeners; it rejoins the ISR",
                lambda faults, args: faults.start_broker(args.id))
    start.add_argument("id", help="the broker id")
    move = add("move-coordinator", "make a broker the coordinator of a group id, transactional id or share key "
                                   "(the leader of its internal partition)",
               lambda faults, args: faults.move_coordinator(args.kind, args.key, args.id))
    move.add_argument("kind", help="group, transaction or share")
    move.add_argument("key", help="the group id, transactional id or groupId:topicId:partition")
    move.add_argument("id", help="the broker id of the new coordinator")
    add("describe", "print the faults in force", lambda faults, _args: faults.describe())


def _follower_call(action: str) -> Callable[[Faults, argparse.Namespace], dict[str, Any]]:
    def call(faults: Faults, args: argparse.Namespace) -> dict[str, Any]:
        result: dict[str, Any] = getattr(faults, action)(args.topic, args.partition, args.id)
        return result
    return call


def _add_request_filter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", help="only requests to this broker id (default: any)")
    parser.add_argument("--client-id", help="only requests from client ids containing this (default: any)")


def run(args: argparse.Namespace) -> int:
    try:
        faults = Faults(args.admin_url, credentials_from_args(args))
        state = args.call(faults, args)
    except ValueError as error:  # FaultError: the broker refused it; or bad credentials options
        return _fail(args, str(error), 2)
    except AdminPortError as error:
        return _fail(args, str(error), 1)
    except OSError as error:
        return _fail(args, f"cannot reach {args.admin_url}: {error}", 1)
    print(json.dumps(state, indent=1))
    return 0


def _fail(args: argparse.Namespace, reason: str, exit_code: int) -> int:
    print(f"minikafka faults {args.fault}: {reason}", file=sys.stderr)
    return exit_code
