"""`python -m bench.plot [--results FILE] [--out DIR]`: one PNG per benchmark goal, minikafka against Apache Kafka
over time, drawn with matplotlib from `bench/results/results.jsonl` (`bench.results_log`).

A goal with a ratio gets the ratio per run (1.0 = as fast as Kafka; for CPU-s/GB and latency lower is better, the
metric names say which); a goal with many metrics per run (the throughput matrix) gets the median over its
metrics with the min-max band. A goal without a Kafka figure plots its value (ms, MiB, ...) when it has a unit
other than a violation count. The docs build (`docs/_gen/gen_pages.py`) calls `render_plots` and
`plots_markdown`, so the site's Benchmarks page always shows the file's current contents.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from bench.results_log import GOALS, RESULTS_FILE, BenchResult, load_results

__all__ = ["RESULTS_FILE", "load_results", "plots_markdown", "render_plots"]

#: more metrics than this per goal are drawn as median and band instead of a line each
MAX_LINES = 6


def _when(result: BenchResult) -> datetime:
    return datetime.fromisoformat(result.timestamp.replace("Z", "+00:00"))


def _plotted(results: list[BenchResult]) -> tuple[str, list[BenchResult]]:
    """("ratio" | "value", the results to draw) for one goal; ("", []) when there is nothing to plot."""
    with_ratio = [r for r in results if r.ratio is not None]
    if with_ratio:
        return "ratio", with_ratio
    values = [r for r in results if r.unit != "violations"]
    return ("value", values) if values else ("", [])


def _figure_png(goal: str, kind: str, results: list[BenchResult]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.dates import DateFormatter, date2num

    figure, axes = pyplot.subplots(figsize=(8, 3.6), dpi=100)
    by_metric: dict[str, list[BenchResult]] = defaultdict(list)
    for result in results:
        by_metric[result.metric].append(result)
    if len(by_metric) <= MAX_LINES:
        for metric, points in sorted(by_metric.items()):
            points.sort(key=_when)
            ys = [float((p.ratio if kind == "ratio" else p.value) or 0.0) for p in points]
            axes.plot(date2num([_when(p) for p in points]), ys, marker="o", label=_short(metric))
        axes.legend(fontsize=7, loc="best")
    else:  # a median line and a min-max band per unit (MB/s and CPU-s/GB ratios read in opposite directions)
        by_unit: dict[str, dict[datetime, list[float]]] = defaultdict(lambda: defaultdict(list))
        for result in results:
            value = result.ratio if kind == "ratio" else result.value
            by_unit[result.unit][_when(result)].append(float(value or 0.0))
        for unit, by_run in sorted(by_unit.items()):
            runs = sorted(by_run)
            xs = date2num(runs)
            metrics = len({r.metric for r in results if r.unit == unit})
            line = axes.plot(xs, [statistics.median(by_run[run]) for run in runs], marker="o",
                             label=f"{unit}: median of the run ({metrics} cases), min - max shaded")[0]
            axes.fill_between(xs, [min(by_run[run]) for run in runs], [max(by_run[run]) for run in runs],
                              alpha=0.15, color=line.get_color())
        axes.legend(fontsize=7, loc="best")
    if kind == "ratio":
        axes.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        axes.set_ylabel("minikafka / Apache Kafka")
    else:
        axes.set_ylabel(results[0].unit)
    axes.set_title(GOALS.get(goal, (goal, ""))[0], fontsize=10)
    axes.xaxis.set_major_formatter(DateFormatter("%m-%d %H:%M"))
    figure.autofmt_xdate()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    pyplot.close(figure)
    return buffer.getvalue()


def _short(metric: str, limit: int = 70) -> str:
    return metric if len(metric) <= limit else metric[: limit - 3] + "..."


def _by_goal(results: list[BenchResult]) -> dict[str, list[BenchResult]]:
    grouped: dict[str, list[BenchResult]] = defaultdict(list)
    for result in results:
        grouped[result.goal].append(result)
    return {goal: grouped[goal] for goal in [*GOALS, *sorted(set(grouped) - set(GOALS))] if goal in grouped}


def render_plots(results: list[BenchResult]) -> dict[str, bytes]:
    """`<goal>.png` -> PNG bytes, for every goal with something to plot."""
    images = {}
    for goal, goal_results in _by_goal(results).items():
        kind, plotted = _plotted(goal_results)
        if kind:
            images[f"{goal}.png"] = _figure_png(goal, kind, plotted)
    return images


def plots_markdown(results: list[BenchResult], image_dir: str) -> str:
    """A "Trends" section: each goal's plot, and the goals whose record is a pass/fail count."""
    lines = ["", "## Trends", "",
             "Drawn by `python -m bench.plot` from `bench/results/results.jsonl`, which every benchmark run appends "
             "to (the earlier points were seeded from the runs recorded before that file existed). A ratio above "
             "1 means minikafka measured more than Apache Kafka in the same run: better for MB/s and records/s, "
             "worse for CPU-s/GB and latency.", ""]
    counts = []
    for goal, goal_results in _by_goal(results).items():
        kind, _plotted_results = _plotted(goal_results)
        title = GOALS.get(goal, (goal, ""))[0]
        if kind:
            lines += [f"### {title}", "", f"![{title}]({image_dir}/{goal}.png)", ""]
        else:
            latest = max(goal_results, key=_when)
            counts.append(f"| {title} | {latest.metric} | {latest.value:g} | {latest.timestamp[:10]} |")
    if counts:
        lines += ["### Pass/fail goals", "", "| goal | metric | latest | date |", "|---|---|---:|---|", *counts, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS_FILE, help="the JSON-lines file of results")
    parser.add_argument("--out", type=Path, default=Path("build/bench-plots"), help="where the PNGs go")
    args = parser.parse_args(argv)
    results = load_results(args.results)
    if not results:
        print(f"no results in {args.results}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name, png in render_plots(results).items():
        (args.out / name).write_bytes(png)
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
