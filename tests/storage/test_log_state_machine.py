"""Model-based test: random appends, rolls, retention-free reopen (clean or crash) vs an in-memory model."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from minikafka.protocol.records import iter_batches
from minikafka.storage.clock import FakeClock
from minikafka.storage.log_config import LogConfig
from minikafka.storage.unified_log import UnifiedLog
from tests.storage.conftest import T0, batch

CONFIG = LogConfig.from_props({"segment.bytes": "400", "index.interval.bytes": "64"})


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="minikafka-sm-"))
        self.clock = FakeClock(T0)
        self.log = UnifiedLog(self.root / "sm-0", CONFIG, clock=self.clock)
        self.values: list[bytes] = []

    @rule(values=st.lists(st.binary(min_size=0, max_size=60), min_size=1, max_size=4))
    def append(self, values: list[bytes]) -> None:
        info = self.log.append_as_leader(batch(*values, timestamp_ms=T0 + len(self.values)))
        assert info.first_offset == len(self.values)
        self.values.extend(values)
        assert info.last_offset == len(self.values) - 1

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.flush()
        self.log = UnifiedLog(self.root / "sm-0", CONFIG, clock=self.clock, clean_shutdown=clean,
                              recovery_point=0)

    @precondition(lambda self: len(self.values) > 0)
    @rule(data=st.data())
    def read_from(self, data: st.DataObject) -> None:
        start = data.draw(st.integers(0, len(self.values) - 1))
        fetched = self.log.read(start, data.draw(st.integers(1, 2000))).records
        records = [r for b in iter_batches(fetched) for r in b.records()]
        assert records, "min_one_message must return at least one batch"
        assert records[0].offset <= start
        for record in records:
            assert record.value == self.values[record.offset]

    @precondition(lambda self: len(self.values) > 0)
    @rule(data=st.data())
    def lookup_timestamp(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.values) - 1))
        # every record's timestamp is T0 + its offset (see `append`)
        assert self.log.fetch_offset_by_timestamp(T0 + index) == (index, T0 + index)

    @invariant()
    def offsets_match_model(self) -> None:
        assert self.log.log_end_offset == len(self.values)
        segments = self.log.segments()
        assert [s.base_offset for s in segments] == sorted({s.base_offset for s in segments})
        assert all(s.offset_index.path.stat().st_size % 8 == 0 for s in segments)

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


LogMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
TestLogStateMachine = LogMachine.TestCase
