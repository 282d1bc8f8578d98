"""Hypothesis round-trips and a fuzz invariant for the record-batch layer."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.protocol.errors import CorruptMessageError
from minikafka.protocol.records import CompressionType, Record, RecordBatch, iter_batches
from minikafka.protocol.records.builder import _encode_records_c, _encode_records_python, build_batch

_nullable_bytes = st.none() | st.binary(max_size=64)
_headers = st.lists(st.tuples(st.text(max_size=8), _nullable_bytes), max_size=3).map(tuple)


@st.composite
def _batches(draw: st.DrawFn) -> tuple[int, list[Record], CompressionType, int | None]:
    base_offset = draw(st.integers(min_value=0, max_value=2**62))
    gaps = draw(st.lists(st.integers(min_value=0, max_value=1000), max_size=12))
    base_timestamp = draw(st.integers(min_value=0, max_value=2**45))
    offsets = []
    offset = base_offset
    for gap in gaps:
        offset += gap
        offsets.append(offset)
        offset += 1
    records = [
        Record(
            offset,
            base_timestamp + draw(st.integers(min_value=-(2**31), max_value=2**31)),
            draw(_nullable_bytes),
            draw(_nullable_bytes),
            draw(_headers),
        )
        for offset in offsets
    ]
    codec = draw(st.sampled_from(list(CompressionType)))
    delete_horizon_ms = draw(st.none() | st.integers(min_value=0, max_value=2**45))
    return base_offset, records, codec, delete_horizon_ms


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batches())
def test_build_then_read_round_trips(case: tuple[int, list[Record], CompressionType, int | None]) -> None:
    base_offset, records, codec, delete_horizon_ms = case
    data = build_batch(records, base_offset=base_offset, compression=codec, delete_horizon_ms=delete_horizon_ms)
    batch = RecordBatch(data)
    batch.ensure_valid()
    assert batch.size_bytes == len(data)
    assert batch.records_count == len(records)
    assert batch.delete_horizon_ms == delete_horizon_ms
    if records:
        assert batch.last_offset == records[-1].offset
        assert batch.max_timestamp == max(r.timestamp for r in records)
    assert list(batch.records()) == records
    assert list(batch._records_python()) == records
    assert list(batch.keys()) == [(r.offset, r.key) for r in records]
    assert [b.base_offset for b in iter_batches(data + data[:-1])] == [base_offset]


@settings(max_examples=int(os.environ.get("RECORDS_FUZZ_EXAMPLES", "300")), deadline=None)
@given(
    st.sampled_from(list(CompressionType)),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=255)),
        max_size=4,
    ),
    st.integers(min_value=0, max_value=40),
)
def test_mangled_batches_only_ever_raise_corrupt_message(
    codec: CompressionType, flips: list[tuple[int, int]], cut: int
) -> None:
    records = [Record(i, 1000 + i, b"key%d" % i, b"value" * i, (("h", b"x"),)) for i in range(5)]
    data = bytearray(build_batch(records, base_offset=0, compression=codec))
    for index, byte in flips:
        data[21 + index % (len(data) - 21)] = byte
    if cut:
        del data[len(data) - cut :]
    if len(data) < 61:
        return
    batch = RecordBatch(data)
    batch.is_valid()
    for reader in (batch.records, batch._records_python, batch.keys, batch._keys_python):
        try:
            for record in reader():
                assert record is not None
        except CorruptMessageError:
            pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batches())
def test_python_and_cython_record_encoders_agree(case: tuple[int, list[Record], CompressionType, int | None]) -> None:
    base_offset, records, _, _ = case
    if not records:
        return
    cython_section = bytes(_encode_records_c(records, base_offset))
    python_section = bytes(_encode_records_python(records, base_offset, records[0].timestamp))
    assert cython_section == python_section
