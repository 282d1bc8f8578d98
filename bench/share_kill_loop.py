"""kill -9 loop over share-group consumption (issue 23): no acknowledged record is delivered again after a restart,
and every record is eventually acknowledged or archived.

    .venv/bin/python -m bench.share_kill_loop [--kills 10] [--records-per-round 200] [--no-record]

One minikafka broker on a data dir, one partition, one confluent-kafka ShareConsumer (explicit mode) in a thread
that ACCEPTs what it receives and commits after every poll (50 ms later). Each round produces `--records-per-round`
records over 0.5-2 s while the consumer works, then kills the broker with SIGKILL and restarts it on the same port
and data dir. Checked: a record whose ACCEPT the broker confirmed (commit_sync answered without error) is never
delivered again; after the last round every produced record gets accepted. Prints one summary line and, unless
--no-record, appends the figures to bench/results/results.jsonl and a section to bench/results/HISTORY.md.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.results_log import HISTORY_MD, RESULTS_FILE, append_history, append_results, history_header, result


def record(command: str, kills: int, records: int, deliveries: int, violations: list[str], never_accepted: int,
           load_before: float) -> None:
    """Append the figures to bench/results/results.jsonl and the write-up to bench/results/HISTORY.md."""
    append_history("\n".join([
        *history_header("kill -9 during share consumption (issue 23)", command, load_before),
        f"- {kills} kills, {records:,} records, {deliveries:,} deliveries (records whose ACCEPT the broker had not "
        f"confirmed when it died are delivered again, as by Kafka); {len(violations)} records delivered again after "
        f"a confirmed ACCEPT; {never_accepted} never accepted"
        + (f"; first violations: {violations[:3]}" if violations else ""),
        "",
    ]))
    note = f"{records} records, {deliveries} deliveries"
    append_results([
        result("share-kill-loop", f"records delivered again after a confirmed ACCEPT, {kills} kills", len(violations),
               "violations", command=command, note=note),
        result("share-kill-loop", f"records never accepted, {kills} kills", never_accepted, "records",
               command=command, note=note),
    ])


def main(argv: list[str] | None = None) -> int:
    from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, NewTopic

    from minikafka.testing import MiniKafka

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--records-per-round", type=int, default=200)
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    work = tempfile.TemporaryDirectory(prefix="share-kill-")
    broker = MiniKafka(data_dir=Path(work.name) / "data").start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("q", 1, 1)])["q"].result(timeout=30)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "kill-loop",
                                  "share.acknowledgement.mode": "explicit"})
        consumer.subscribe(["q"])
        confirmed: set[bytes] = set()
        violations: list[str] = []
        deliveries = [0]
        stop = threading.Event()
        warm = threading.Event()

        def consume() -> None:
            while not stop.is_set():
                pending = []
                for message in consumer.poll(0.5):
                    if message.error() is not None:
                        continue
                    value = bytes(message.value() or b"")
                    deliveries[0] += 1
                    warm.set()
                    if value in confirmed:
                        violations.append(f"{value!r} delivered again (delivery count {message.delivery_count()})")
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                    pending.append(value)
                time.sleep(0.05)  # some work: records stay acquired for a moment, so kills land mid-flight
                try:
                    results = consumer.commit_sync(10)
                except Exception:
                    continue
                if pending and results and all(error is None for error in results.values()):
                    confirmed.update(pending)

        thread = threading.Thread(target=consume)
        thread.start()
        deadline = time.monotonic() + 60
        while not warm.is_set():  # the share partition starts at `latest`: markers until one arrives
            assert time.monotonic() < deadline, "the share consumer never received a record"
            producer.produce("q", b"marker", partition=0)
            producer.flush(10)
            time.sleep(0.5)
        produced: list[bytes] = []
        for round_index in range(args.kills):
            # records trickle in over 0.5-2 s and the broker dies in the middle of consuming them
            pause_s = random.uniform(0.5, 2.0) / args.records_per_round
            for index in range(args.records_per_round):
                value = b"r%d-%d" % (round_index, index)
                producer.produce("q", value, partition=0)
                produced.append(value)
                producer.poll(0)
                time.sleep(pause_s)
            assert producer.flush(60) == 0
            broker.kill()
            broker.start()
        deadline = time.monotonic() + 120
        while not set(produced) <= confirmed and time.monotonic() < deadline:
            time.sleep(0.5)
        stop.set()
        thread.join(30)
        consumer.close()
        missing = set(produced) - confirmed
        print(f"kills={args.kills} records={len(produced)} deliveries={deliveries[0]} "
              f"confirmed={len(confirmed & set(produced))} never_accepted={len(missing)} "
              f"violations={len(violations)} {violations[:3]}", flush=True)
        if not args.no_record:
            command = "python -m bench.share_kill_loop " + shlex.join(argv if argv is not None else sys.argv[1:])
            record(command.strip(), args.kills, len(produced), deliveries[0], violations, len(missing), load_before)
            print(f"appended to {HISTORY_MD} and {RESULTS_FILE}")
        return 0 if not violations and not missing else 1
    finally:
        broker.stop()
        work.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
