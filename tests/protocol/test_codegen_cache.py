"""The cache of kafka-python's generated codecs (protocol/codegen_cache.py): real files, real `serve` processes."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.protocol.codegen_cache import cached_compile
from minikafka.testing import MiniKafka
from minikafka.testing.mini_kafka import LOOPBACK, metadata_broker_count

SOURCE = "def _encode(item, out):\n    return item * 2\n"


@pytest.fixture(autouse=True)
def _bytecode_writing_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in the broker MiniKafka starts (this machine's suites may run with PYTHONDONTWRITEBYTECODE=1)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _run(code: object) -> object:
    namespace: dict[str, object] = {}
    exec(code, namespace)
    return namespace["_encode"](21, None)  # type: ignore[operator]


def test_a_compiled_codec_is_stored_and_read_back(tmp_path: Path) -> None:
    first = cached_compile(tmp_path, SOURCE, "<codegen:X_v1>", "exec")
    stored = list(tmp_path.iterdir())
    assert len(stored) == 1 and stored[0].suffix == ".marshal"
    stored[0].write_bytes(marshal.dumps(compile("def _encode(item, out):\n    return -1\n", "<x>", "exec")))
    # what is read back is what the file holds (here planted, to see that it is read and not recompiled)
    assert _run(cached_compile(tmp_path, SOURCE, "<codegen:X_v1>", "exec")) == -1
    assert _run(first) == 42
    # another source, or the same source under another name, is another file
    cached_compile(tmp_path, SOURCE.replace("2", "3"), "<codegen:X_v1>", "exec")
    cached_compile(tmp_path, SOURCE, "<codegen:X_v2>", "exec")
    assert len(list(tmp_path.iterdir())) == 3


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", marshal.dumps(42)])
def test_a_damaged_entry_is_compiled_again_and_replaced(tmp_path: Path, damage: bytes) -> None:
    cached_compile(tmp_path, SOURCE, "<codegen:X_v1>", "exec")
    (entry,) = tmp_path.iterdir()
    entry.write_bytes(damage)
    assert _run(cached_compile(tmp_path, SOURCE, "<codegen:X_v1>", "exec")) == 42
    assert isinstance(marshal.loads(entry.read_bytes()), type(compile("", "", "exec")))


def test_an_unwritable_cache_still_compiles(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be")
    assert _run(cached_compile(blocked / "cache", SOURCE, "<codegen:X_v1>", "exec")) == 42


def test_nothing_is_written_when_bytecode_writing_is_off(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from minikafka.protocol.codegen_cache import cached_compile; "
            f"cached_compile(Path(sys.argv[1]), {SOURCE!r}, '<codegen:X_v1>', 'exec')")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache")], check=True, env=env)
    assert not (tmp_path / "cache").exists()


def test_a_broker_fills_the_cache_and_the_next_one_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker's own codecs (its first Metadata answer's, among others) land in the cache under
    PYTHONPYCACHEPREFIX; a second broker on the same cache adds none of those again."""
    prefix = tmp_path / "pycache"
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(prefix))
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    cache = prefix / "minikafka-codegen" / str(sys.implementation.cache_tag)
    seen: list[set[str]] = []
    for run in range(2):
        with MiniKafka(data_dir=tmp_path / f"data-{run}") as kafka:
            assert metadata_broker_count(LOOPBACK, kafka.port) == 1
        seen.append({entry.name for entry in cache.iterdir()})
    assert seen[0], "the first broker stored no codec"
    assert seen[1] == seen[0]
