"""TransactionIndex (`.txnindex`) on its own and inside LogSegment: format, search, truncation, renames."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from minikafka.storage.indexes import IndexCorruptError
from minikafka.storage.log_segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, LogSegment
from minikafka.storage.producer_state import CompletedTxn
from minikafka.storage.transaction_index import ENTRY_SIZE_BYTES, AbortedTransaction, TransactionIndex


def _index(tmp_path: Path, start_offset: int = 0) -> TransactionIndex:
    return TransactionIndex(tmp_path / f"{start_offset:020d}.txnindex", start_offset)


def test_file_is_created_on_first_append_in_kafkas_34_byte_format(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert not index.path.exists()
    index.append(AbortedTransaction(producer_id=7, first_offset=3, last_offset=10, last_stable_offset=11))
    index.append(AbortedTransaction(producer_id=8, first_offset=5, last_offset=12, last_stable_offset=13))
    index.flush()
    data = index.path.read_bytes()
    assert ENTRY_SIZE_BYTES == 34
    assert data == struct.pack(">hqqqq", 0, 7, 3, 10, 11) + struct.pack(">hqqqq", 0, 8, 5, 12, 13)
    index.close()
    reopened = _index(tmp_path)
    assert reopened.all_aborted_transactions() == [AbortedTransaction(7, 3, 10, 11), AbortedTransaction(8, 5, 12, 13)]
    reopened.sanity_check()


def test_last_offset_must_increase(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.append(AbortedTransaction(1, 0, 10, 11))
    with pytest.raises(IndexCorruptError):
        index.append(AbortedTransaction(2, 5, 10, 11))
    with pytest.raises(IndexCorruptError):
        index.append(AbortedTransaction(2, 5, 9, 11))
    assert index.entries == 1


def test_collect_aborted_transactions_range_and_completeness(tmp_path: Path) -> None:
    index = _index(tmp_path)
    txns = [AbortedTransaction(1, 0, 10, 5), AbortedTransaction(2, 5, 20, 21), AbortedTransaction(3, 22, 30, 40),
            AbortedTransaction(4, 35, 41, 42)]
    for txn in txns:
        index.append(txn)
    # [12, 22): txn 1 ended before 12, txn 3 starts at 22; txn 2's LSO 21 < 22 so the search goes on to txn 3,
    # whose LSO 40 >= 22 completes it before txn 4 is looked at.
    assert index.collect_aborted_transactions(12, 22) == ([txns[1]], True)
    assert index.collect_aborted_transactions(0, 100) == (txns, False)
    assert index.collect_aborted_transactions(31, 35) == ([], True)
    assert index.collect_aborted_transactions(0, 1) == ([txns[0]], True)


def test_truncate_and_reset(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for i in range(4):
        index.append(AbortedTransaction(i, 10 * i, 10 * i + 5, 10 * i + 6))
    index.truncate_to(25)  # entries whose marker is at or above 25 go
    assert [t.last_offset for t in index.all_aborted_transactions()] == [5, 15]
    assert index.path.stat().st_size == 2 * ENTRY_SIZE_BYTES
    index.append(AbortedTransaction(9, 20, 26, 27))
    assert index.path.stat().st_size == 3 * ENTRY_SIZE_BYTES
    index.truncate_to(0)
    assert index.entries == 0 and not index.path.exists()
    index.append(AbortedTransaction(9, 1, 2, 3))
    index.reset()
    assert index.entries == 0 and not index.path.exists()


def test_sanity_check_rejects_torn_entries_bad_version_and_offsets_below_start(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 1, 100, 110, 111) + b"\x00" * 5)
    with pytest.raises(IndexCorruptError, match="trailing"):
        TransactionIndex(path, 100).sanity_check()
    path.write_bytes(struct.pack(">hqqqq", 1, 1, 100, 110, 111))
    with pytest.raises(IndexCorruptError, match="version"):
        TransactionIndex(path, 100).sanity_check()
    path.write_bytes(struct.pack(">hqqqq", 0, 1, 90, 99, 111))
    with pytest.raises(IndexCorruptError, match="less than start offset"):
        TransactionIndex(path, 100).sanity_check()


def test_segment_renames_flushes_and_deletes_its_txn_index(tmp_path: Path) -> None:
    segment = LogSegment.create(tmp_path, 0, suffix=CLEANED_SUFFIX)
    segment.update_txn_index(CompletedTxn(5, 0, 3, is_aborted=False), 4)
    assert not segment.txn_index.path.exists()  # commits are not indexed
    segment.update_txn_index(CompletedTxn(5, 0, 3, is_aborted=True), 4)
    assert segment.txn_index.path.name == "00000000000000000000.txnindex.cleaned"
    segment.flush()
    segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
    assert (tmp_path / "00000000000000000000.txnindex.swap").exists()
    segment.change_file_suffixes(SWAP_SUFFIX, "")
    assert (tmp_path / "00000000000000000000.txnindex").exists()
    segment.close()
    reopened = LogSegment(tmp_path, 0)
    assert reopened.txn_index.all_aborted_transactions() == [AbortedTransaction(5, 0, 3, 4)]
    reopened.change_file_suffixes("", DELETED_SUFFIX)
    assert (tmp_path / "00000000000000000000.txnindex.deleted").exists()
    reopened.delete()
    assert list(tmp_path.iterdir()) == []


def test_segment_without_aborts_has_no_txnindex_file(tmp_path: Path) -> None:
    segment = LogSegment.create(tmp_path, 0)
    segment.change_file_suffixes("", DELETED_SUFFIX)
    segment.change_file_suffixes(DELETED_SUFFIX, "")
    segment.flush()
    segment.close()
    assert not list(tmp_path.glob("*.txnindex*"))
