"""The fault-injection seam of the storage tests (issue 13, item 2): `DiskFault` fails the Nth write, fsync or
rename with a chosen errno, injected where the operating system answers — `os.pwrite` (segment files),
`os.fsync`, `os.replace`, `os.rename`, and the file objects `open()` hands the index, transaction-index and
checkpoint/snapshot writers. It counts calls from every thread of the process."""

from __future__ import annotations

import builtins
import errno
import os
from collections.abc import Iterator
from typing import Any

import pytest

from minikafka.storage import checkpoint, indexes, transaction_index


class DiskFault:
    """Counts write, fsync and rename calls and fails the `fail_at`-th (1-based) with `error_number`."""

    def __init__(self, fail_at: int | None, error_number: int) -> None:
        self.fail_at = fail_at
        self.error_number = error_number
        self.calls = 0
        self.fired: str | None = None

    def check(self, what: str) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            self.fired = what
            raise OSError(self.error_number, os.strerror(self.error_number))


class FaultyFile:
    """A real file object whose writes consult the DiskFault first."""

    def __init__(self, file: Any, fault: DiskFault) -> None:
        self._file, self._fault = file, fault

    def write(self, data: Any) -> int:
        self._fault.check("write")
        return int(self._file.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)

    def __enter__(self) -> FaultyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


@pytest.fixture
def disk_fault(monkeypatch: pytest.MonkeyPatch) -> Iterator[DiskFault]:
    """Installs a DiskFault (not yet armed) under os.pwrite/fsync/replace/rename and the writers' open()."""
    fault = DiskFault(None, errno.ENOSPC)
    for name in ("pwrite", "fsync", "replace", "rename"):
        real = getattr(os, name)

        def wrapped(*args: Any, _real: Any = real, _name: str = name) -> Any:
            fault.check(_name)
            return _real(*args)

        monkeypatch.setattr(os, name, wrapped)

    def faulty_open(*args: Any, **kwargs: Any) -> FaultyFile:
        return FaultyFile(builtins.open(*args, **kwargs), fault)

    for module in (indexes, checkpoint, transaction_index):
        monkeypatch.setattr(module, "open", faulty_open, raising=False)
    yield fault
    monkeypatch.undo()
