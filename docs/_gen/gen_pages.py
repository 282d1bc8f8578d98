"""Run by mkdocs-gen-files during `mkdocs build`: the generated reference pages, DESIGN.md and BENCHMARKS.md
as site pages, and one plot per benchmark goal from bench/results/results.jsonl."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import mkdocs_gen_files

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# kafka-python's schema loader uses importlib.resources' legacy API; pytest's config filters the same warning
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"importlib\.resources.*|kafka\.protocol.*")

import reference  # noqa: E402

from bench import plot  # noqa: E402

for path, render in reference.PAGES.items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(render())

# The repository's own Markdown files, shown in the site without a copy to keep in step.
with mkdocs_gen_files.open("design-decisions.md", "w") as page:
    page.write((REPO_ROOT / "DESIGN.md").read_text())

results = plot.load_results(REPO_ROOT / plot.RESULTS_FILE)
with mkdocs_gen_files.open("benchmarks.md", "w") as page:
    page.write((REPO_ROOT / "BENCHMARKS.md").read_text())
    page.write(plot.plots_markdown(results, image_dir="benchmarks"))
for name, png in plot.render_plots(results).items():
    with mkdocs_gen_files.open(f"benchmarks/{name}", "wb") as image:
        image.write(png)
