"""`python -m bench.throughput --rounds N` (N > 1): minikafka and Apache Kafka running at once, every case measured on
both back to back in each of N rounds, reported as medians and paired ratios (as bench/security_throughput.py does).

Both brokers start once and get the same warm-up as in a `--rounds 1` run. Then, per round and per case, each broker
gets a fresh topic and each operation of OPS runs on one broker and right after on the other; which broker goes
first alternates by round. Once the case's three operations are done, both topics are deleted, so disk use stays at
one case's worth. Per case and op the table gives each broker's median MB/s and CPU-s/GB and the median of each
round's own minikafka / Kafka ratio (the two runs were seconds apart, so a slow minute of the shared machine moves
both sides of a ratio); a second table lists every round. The idle-CPU note and `--latency` run once per broker,
after the last round. Imported by bench.throughput's main() only when needed, since this module imports it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from bench.e2e_latency import LatencyResult
from bench.results_log import BenchResult
from bench.security_throughput import BROKERS, RunningBroker, _median
from bench.throughput import (
    OPS,
    Case,
    Measurement,
    _fmt,
    after_throughput,
    case_topic,
    create_topic,
    delete_topic,
    minikafka_server,
    operations,
    warm_up,
    with_broker_cpu,
)
from tests.apache_kafka import ApacheKafka

#: the name of the broker run from `--baseline-src` (another checkout of minikafka)
BASELINE = "baseline"

# broker -> case -> one (produce, consume (group), consume (assign)) per round
RoundResults = dict[str, dict[Case, list[tuple[Measurement, ...]]]]


def _start(stack: ExitStack, name: str, work: Path, lib_dir: Path, notes: list[str],
           source: Path | None = None) -> RunningBroker | None:
    """Start `name` for the rest of `stack`; None (and a note) if minikafka does not come up, as in `--rounds 1`.
    BASELINE is minikafka run from `source` (another checkout's src/)."""
    if name == "apache":
        kafka = stack.enter_context(ApacheKafka(work / "apache", lib_dir=lib_dir))
        assert kafka.process is not None
        return RunningBroker(name, kafka.process.pid, {"PLAINTEXT": kafka.bootstrap})
    (work / name).mkdir()
    try:
        bootstrap, pid = stack.enter_context(minikafka_server(work / name, source if name == BASELINE else None))
    except RuntimeError as exc:
        notes.append(f"minikafka not measured: {str(exc).splitlines()[0]}")
        print(f"minikafka could not be measured: {exc}", file=sys.stderr)
        return None
    return RunningBroker(name, pid, {"PLAINTEXT": bootstrap})


def checkout_label(src: Path) -> str:
    """The baseline checkout named by its commit: the records keep this, not a path that means nothing elsewhere."""
    done = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          timeout=30)
    return f"a checkout of {done.stdout.strip()}" if done.returncode == 0 else "a checkout outside git"


def measure_rounds(work: Path, lib_dir: Path, cases: list[Case], args: argparse.Namespace,
                   latencies: dict[str, LatencyResult], notes: list[str]) -> RoundResults:
    """Start the brokers (both, or the one of `--only`), warm them up, run `args.rounds` rounds of `cases`, then
    each broker's idle CPU and latency case; the brokers stop on return."""
    results: RoundResults = {}
    with ExitStack() as stack:
        names = [name for name in BROKERS if args.only in (None, name)]
        if getattr(args, "baseline_src", None) is not None:
            names.append(BASELINE)
            notes.append(f"broker {BASELINE}: minikafka from BASE/src, {checkout_label(args.baseline_src)}")
        started = [_start(stack, name, work, lib_dir, notes, getattr(args, "baseline_src", None)) for name in names]
        brokers = [broker for broker in started if broker is not None]
        for broker in brokers:
            print(f"[{broker.name}] warm-up: {args.warm_up_records} records per record size and codec", flush=True)
            warm_up(broker.bootstraps["PLAINTEXT"], lib_dir, cases, args.warm_up_records)
        if len(brokers) > 1:
            notes.append(f"{args.rounds} rounds; the order of the brokers ({', '.join(b.name for b in brokers)}) "
                         "turns by one each round, so each goes first in turn")
        for round_index in range(args.rounds):
            shift = round_index % max(1, len(brokers))
            order = brokers[shift:] + brokers[:shift]
            for index, case in enumerate(cases):
                print(f"round {round_index + 1}/{args.rounds}: {case.label}, {case.num_records} records", flush=True)
                measure_case(order, f"{case_topic(index, case)}-r{round_index + 1}", lib_dir, case, results)
        for broker in brokers:
            after_throughput(broker.name, broker.bootstraps["PLAINTEXT"], broker.pid, args, latencies, notes)
    return results


def measure_case(order: list[RunningBroker], topic: str, lib_dir: Path, case: Case, results: RoundResults) -> None:
    """A fresh `topic` on each broker; each operation of OPS on every broker of `order` in turn; the topics deleted."""
    runs = {}
    for broker in order:
        create_topic(broker.bootstraps["PLAINTEXT"], topic, case.partitions)
        runs[broker.name] = operations(lib_dir, broker.bootstraps["PLAINTEXT"], topic, case)
    measured: dict[str, list[Measurement]] = {broker.name: [] for broker in order}
    for slot, op in enumerate(OPS):
        for broker in order:
            done = with_broker_cpu(broker.pid, case, runs[broker.name][slot])
            measured[broker.name].append(done)
            print(f"  [{broker.name}] {op} {done.mb_per_s:.1f} MB/s {done.cpu_s_per_gb:.2f} CPU-s/GB", flush=True)
    for broker in order:
        delete_topic(broker.bootstraps["PLAINTEXT"], topic)
        results.setdefault(broker.name, {}).setdefault(case, []).append(tuple(measured[broker.name]))


def _ratios(ours: list[float], theirs: list[float]) -> list[float]:
    """Each round's ours / theirs (NaN where either is missing)."""
    return [o / t if t > 0 else float("nan") for o, t in zip(ours, theirs, strict=False)]


def _times(value: float) -> str:
    return "n/a" if value != value else f"{value:.2f}x"


def rounds_tables(results: RoundResults, cases: list[Case]) -> str:
    """Medians over the rounds with the paired ratios (ratio = minikafka MB/s / Kafka's, CPU ratio = minikafka
    CPU-s/GB / Kafka's, each the median of the rounds' own ratios), then every round's numbers."""
    medians = ["| case | op | Apache Kafka MB/s | minikafka MB/s | ratio (paired) | Apache CPU-s/GB "
               "| minikafka CPU-s/GB | CPU ratio (paired) |",
               "|---|---|---:|---:|---:|---:|---:|---:|"]
    every = ["| case | op | Apache MB/s | minikafka MB/s | ratio | Apache CPU-s/GB | minikafka CPU-s/GB | CPU ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for case in cases:
        for slot, op in enumerate(OPS):
            apache = [measured[slot] for measured in results.get("apache", {}).get(case, [])]
            ours = [measured[slot] for measured in results.get("minikafka", {}).get(case, [])]
            a_mb, m_mb = [m.mb_per_s for m in apache], [m.mb_per_s for m in ours]
            a_cpu, m_cpu = [m.cpu_s_per_gb for m in apache], [m.cpu_s_per_gb for m in ours]
            mb_ratios, cpu_ratios = _ratios(m_mb, a_mb), _ratios(m_cpu, a_cpu)
            medians.append(f"| {case.label} | {op} | {_fmt(_median(a_mb))} | {_fmt(_median(m_mb))} | "
                           f"{_times(_median(mb_ratios))} | {_fmt(_median(a_cpu), 2)} | {_fmt(_median(m_cpu), 2)} | "
                           f"{_times(_median(cpu_ratios))} |")
            every.append(f"| {case.label} | {op} | {_joined(a_mb, 1)} | {_joined(m_mb, 1)} | {_joined(mb_ratios, 2)} | "
                         f"{_joined(a_cpu, 2)} | {_joined(m_cpu, 2)} | {_joined(cpu_ratios, 2)} |")
    return "\n".join(medians) + "\n\nEvery round (round 1, 2, ...):\n\n" + "\n".join(every)


def rounds_results(results: RoundResults, cases: list[Case], command: str) -> list[BenchResult]:
    """Per case and op the median MB/s and CPU-s/GB with the median paired ratios, for results.jsonl."""
    from bench.throughput import case_results

    figures: list[BenchResult] = []
    for case in cases:
        for slot, op in enumerate(OPS):
            apache = [measured[slot] for measured in results.get("apache", {}).get(case, [])]
            ours = [measured[slot] for measured in results.get("minikafka", {}).get(case, [])]
            if not apache or not ours:
                continue
            a_mb, m_mb = [m.mb_per_s for m in apache], [m.mb_per_s for m in ours]
            a_cpu, m_cpu = [m.cpu_s_per_gb for m in apache], [m.cpu_s_per_gb for m in ours]
            median_apache = Measurement(float("nan"), _median(a_mb), _median(a_cpu))
            median_ours = Measurement(float("nan"), _median(m_mb), _median(m_cpu))
            figures += case_results(case, op, median_apache, median_ours, command,
                                    _median(_ratios(m_mb, a_mb)), _median(_ratios(m_cpu, a_cpu)))
    return figures


def _joined(values: list[float], digits: int) -> str:
    """One value per round, `; `-separated (`_fmt` puts commas in thousands)."""
    return "; ".join(_fmt(value, digits) for value in values) or "n/a"


def baseline_table(results: RoundResults, cases: list[Case]) -> str:
    """This checkout's minikafka against the `--baseline-src` one, measured in the same rounds: median CPU-s/GB of
    each and the median of the rounds' own ratios (this / baseline), with each one's paired ratio to Kafka."""
    lines = ["| case | op | baseline CPU-s/GB | this CPU-s/GB | this / baseline (paired) | baseline / Kafka "
             "| this / Kafka | rounds (this / baseline) |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for case in cases:
        for slot, op in enumerate(OPS):
            base = [measured[slot].cpu_s_per_gb for measured in results.get(BASELINE, {}).get(case, [])]
            ours = [measured[slot].cpu_s_per_gb for measured in results.get("minikafka", {}).get(case, [])]
            apache = [measured[slot].cpu_s_per_gb for measured in results.get("apache", {}).get(case, [])]
            paired = _ratios(ours, base)
            lines.append(f"| {case.label} | {op} | {_fmt(_median(base), 2)} | {_fmt(_median(ours), 2)} | "
                         f"{_times(_median(paired))} | {_times(_median(_ratios(base, apache)))} | "
                         f"{_times(_median(_ratios(ours, apache)))} | {_joined(paired, 2)} |")
    return "\n".join(lines)
