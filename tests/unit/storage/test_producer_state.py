"""Idempotent producers: duplicates, sequence and epoch rules, snapshots across restarts."""

from __future__ import annotations

import os

import pytest

from gregor.protocol.error_codes import ErrorCode
from gregor.storage.errors import StorageError
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import NOW, batch

CONFIG = LogConfig(segment_bytes=1000)


def produce(log: Log, sequence: int, count: int = 2, producer_id: int = 9, epoch: int = 0):
    return log.append_as_leader(batch(count, producer_id=producer_id, producer_epoch=epoch,
                                      base_sequence=sequence), 0, NOW)


def refused(log: Log, sequence: int, epoch: int = 0, count: int = 2) -> int:
    end = log.log_end_offset
    with pytest.raises(StorageError) as raised:
        produce(log, sequence, count, epoch=epoch)
    assert log.log_end_offset == end
    return raised.value.code


def test_duplicates_of_the_last_five_batches_return_the_original_offsets(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, NOW)
    infos = [produce(log, sequence) for sequence in range(0, 14, 2)]
    end = log.log_end_offset
    for sequence in (4, 6, 8, 10, 12):
        again = produce(log, sequence)
        original = infos[sequence // 2]
        assert again.duplicate and (again.first_offset, again.last_offset) == \
            (original.first_offset, original.last_offset)
    assert log.log_end_offset == end
    assert refused(log, 2) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "older than the five cached batches"


def test_sequence_gaps_and_epochs(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, NOW)
    produce(log, 0, epoch=3)
    assert refused(log, 3, epoch=3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert refused(log, 2, epoch=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert refused(log, 2, epoch=4) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "a new epoch starts at 0"
    produce(log, 0, epoch=4)
    assert refused(log, 2, epoch=3) == ErrorCode.INVALID_PRODUCER_EPOCH
    produce(log, 2, epoch=4)


def test_unknown_producer_with_any_sequence_is_accepted(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, NOW)
    assert produce(log, 42).first_offset == 0
    assert produce(log, 44).first_offset == 2


def test_sequences_wrap_after_int32_max(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, NOW)
    produce(log, 0x7FFFFFFF - 1, count=2)
    assert produce(log, 0).first_offset == 2


def test_several_batches_of_one_producer_in_one_request(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, NOW)
    request = b"".join(batch(2, producer_id=5, producer_epoch=0, base_sequence=s) for s in (0, 2, 4))
    assert log.append_as_leader(request, 0, NOW).last_offset == 5
    bad = batch(2, producer_id=5, producer_epoch=0, base_sequence=6) + \
        batch(2, producer_id=5, producer_epoch=0, base_sequence=9)
    with pytest.raises(StorageError):
        log.append_as_leader(bad, 0, NOW)
    assert produce(log, 6, producer_id=5).first_offset == 6, "the refused request left no state behind"


def test_other_producers_are_independent(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, NOW)
    produce(log, 0, producer_id=1)
    produce(log, 0, producer_id=2)
    assert produce(log, 0, producer_id=1).duplicate
    log.append_as_leader(batch(3), 0, NOW)
    assert produce(log, 2, producer_id=2).first_offset == 7


@pytest.mark.parametrize("clean", [True, False])
def test_state_survives_restart(tmp_path, clean):
    directory = str(tmp_path / "t-0")
    log = Log(directory, CONFIG, NOW)
    for sequence in range(0, 60, 2):
        produce(log, sequence, count=2)
    assert len(log.segments) > 2
    if clean:
        log.close()
    reopened = Log(directory, CONFIG, NOW, clean_shutdown=clean)
    again = produce(reopened, 58)
    assert again.duplicate and again.first_offset == 58
    assert refused(reopened, 62) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(reopened, 60).first_offset == 60


def test_unclean_restart_replays_headers_after_the_snapshot(tmp_path):
    directory = str(tmp_path / "t-0")
    log = Log(directory, CONFIG, NOW)
    for sequence in range(0, 10, 2):
        produce(log, sequence)
    log.roll(NOW)
    produce(log, 10)
    produce(log, 12, producer_id=77)
    snapshots = sorted(n for n in os.listdir(directory) if n.endswith(".snapshot"))
    assert snapshots == ["00000000000000000010.snapshot"]
    reopened = Log(directory, CONFIG, NOW)
    assert produce(reopened, 10).duplicate
    assert produce(reopened, 12, producer_id=77).duplicate
    assert produce(reopened, 12).first_offset == 14


def test_a_corrupt_snapshot_is_ignored_and_state_rebuilt_from_the_log(tmp_path):
    directory = str(tmp_path / "t-0")
    log = Log(directory, CONFIG, NOW)
    produce(log, 0)
    log.close()
    path = os.path.join(directory, "00000000000000000002.snapshot")
    with open(path, "r+b") as handle:
        handle.seek(8)
        handle.write(b"\xff")
    reopened = Log(directory, CONFIG, NOW, clean_shutdown=True)
    assert produce(reopened, 0).duplicate


def test_idle_producers_expire(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(producer_id_expiration_ms=1000), NOW)
    produce(log, 0)
    log.apply_retention(NOW + 999)
    assert 9 in log.producer_state.producers
    log.apply_retention(NOW + 1000)
    assert log.producer_state.producers == {}
