"""Where epochs start and end, as the leader's divergence check and the follower's truncation ask."""

from __future__ import annotations

from gregor.raft.epoch_cache import EpochCache


def cache(*entries: tuple[int, int]) -> EpochCache:
    made = EpochCache()
    for epoch, start in entries:
        made.assign(epoch, start)
    return made


def test_end_offset_of_known_unknown_and_older_epochs():
    epochs = cache((1, 0), (1, 5), (3, 10), (4, 12))
    assert epochs.entries == [(1, 0), (3, 10), (4, 12)]
    assert epochs.end_offset_for(1, 20, (0, 0)) == (1, 10)
    assert epochs.end_offset_for(2, 20, (0, 0)) == (1, 10)
    assert epochs.end_offset_for(4, 20, (0, 0)) == (4, 20)
    assert epochs.end_offset_for(9, 20, (0, 0)) == (4, 20)
    assert epochs.end_offset_for(0, 20, (0, 0)) == (0, 0)
    assert cache().end_offset_for(3, 7, (2, 7)) == (2, 7)
    assert epochs.last_epoch(0) == 4 and cache().last_epoch(6) == 6


def test_truncation_from_either_end():
    epochs = cache((1, 0), (3, 10), (4, 12))
    epochs.truncate_from_end(12)
    assert epochs.entries == [(1, 0), (3, 10)]
    epochs.truncate_from_start(11)
    assert epochs.entries == [(3, 11)]
    epochs = cache((1, 0), (3, 10))
    epochs.truncate_from_start(10)
    assert epochs.entries == [(3, 10)]
