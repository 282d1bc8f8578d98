"""Broker user and system CPU per GB under Kafka's ProducerPerformance or ConsumerPerformance (issue 14).

    .venv/bin/python -m bench.cpu_split minikafka|apache [--op produce|consume|assign] [--partitions 8] [--acks all]
        [--record-bytes 1024] [--records 1000000] [--compression none] [--runs 3] [--hook "perf record -p PID ..."]
        [--override KEY=VALUE ...]

Starts one broker, warms it with two runs of the case, then measures `--runs` more, each on a fresh topic (for
`--op consume` and `--op assign` the topic is filled first, unmeasured; `assign` reads it with bench.throughput's
group-less confluent-kafka consumer, `consume` with ConsumerPerformance), reading the broker tree's utime and
stime from /proc before and after each. Unlike `bench.throughput`'s total, the split shows where a change lands
(the Python in user time, copies and sockets mostly in system time). `--hook` runs a command around the last
measured run, `PID` replaced by the broker's pid (e.g. `perf record -g -p PID -o perf.data`, `strace -c -f -p PID
-o strace.txt`); it gets SIGINT when the run ends. Prints one line per run; records nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.proc_cpu import process_tree
from bench.throughput import (
    Case,
    create_topic,
    minikafka_server,
    run_assigned_consume,
    run_consumer_perf,
    run_producer_perf,
)
from tests.apache_kafka import ApacheKafka
from tests.kafka_jars import ensure_kafka_jars

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def user_and_system_s(pid: int) -> tuple[float, float]:
    """utime and stime (with reaped children's) of `pid`'s process tree, in seconds."""
    user = system = 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        user += int(fields[11]) + int(fields[13])  # proc(5) fields 14 and 16: utime, cutime
        system += int(fields[12]) + int(fields[14])  # fields 15 and 17: stime, cstime
    return user / CLOCK_TICKS, system / CLOCK_TICKS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_split", description=__doc__.split("\n")[0])
    parser.add_argument("broker", choices=("minikafka", "apache"))
    parser.add_argument("--op", choices=("produce", "consume", "assign"), default="produce")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--acks", default="all")
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a minikafka broker setting (repeatable), e.g. socket.send.buffer.bytes=-1")
    parser.add_argument("--hook", help="command run around the last measured run; PID is the broker's pid")
    args = parser.parse_args(argv)
    consume = run_consumer_perf if args.op == "consume" else (
        lambda _lib_dir, bootstrap, topic, case: run_assigned_consume(bootstrap, topic, case))
    case = Case(args.record_bytes, args.partitions, args.acks, args.records, args.compression)
    lib_dir = ensure_kafka_jars()
    with tempfile.TemporaryDirectory(prefix="cpu-split-") as work, contextlib.ExitStack() as stack:
        if args.broker == "minikafka":
            bootstrap, pid = stack.enter_context(minikafka_server(Path(work), overrides=args.override))
        else:
            kafka = stack.enter_context(ApacheKafka(Path(work) / "apache", lib_dir=lib_dir))
            assert kafka.process is not None
            bootstrap, pid = kafka.bootstrap, kafka.process.pid
        for index in range(2):
            create_topic(bootstrap, f"warm-{index}", case.partitions)
            run_producer_perf(lib_dir, bootstrap, f"warm-{index}", case)
            if args.op != "produce":
                consume(lib_dir, bootstrap, f"warm-{index}", case)
        for run in range(args.runs):
            topic = f"measured-{run}"
            create_topic(bootstrap, topic, case.partitions)
            if args.op != "produce":
                run_producer_perf(lib_dir, bootstrap, topic, case)
            hook = None
            if args.hook and run == args.runs - 1:
                hook = subprocess.Popen(shlex.split(args.hook.replace("PID", str(pid))))
                time.sleep(1)
            user_before, system_before = user_and_system_s(pid)
            measured = (run_producer_perf if args.op == "produce" else consume)(lib_dir, bootstrap, topic, case)
            user_after, system_after = user_and_system_s(pid)
            if hook is not None:
                hook.send_signal(signal.SIGINT)
                hook.wait()
            gb = case.payload_bytes / 1e9
            print(f"{args.broker} {args.op} {case.label}: {measured.mb_per_s:.1f} MB/s, user "
                  f"{(user_after - user_before) / gb:.2f}, sys {(system_after - system_before) / gb:.2f} CPU-s/GB",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
