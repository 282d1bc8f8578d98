"""Small modules with one job: no Python module of the six source packages is over 600 lines (issue 26).

A module that grows past the limit is split along its seams (as `storage/local_log.py` came out of
`unified_log.py`), not given an exemption."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_FOLDERS = ["protocol", "storage", "cleaner", "broker", "testing", "pipeline"]
MAX_LINES = 600


def _line_count(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for _ in file)


def test_no_module_of_the_source_packages_is_over_600_lines() -> None:
    modules = [path for folder in SOURCE_FOLDERS for path in sorted((REPO_ROOT / folder).rglob("*.py"))]
    assert len(modules) > 100  # the packages were found
    too_long = {
        path.relative_to(REPO_ROOT).as_posix(): lines
        for path in modules
        if (lines := _line_count(path)) > MAX_LINES
    }
    assert too_long == {}, f"modules over {MAX_LINES} lines (split them along their seams): {too_long}"
