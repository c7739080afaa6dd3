"""Acknowledging share-group records (KIP-932): the types, and a partition's acknowledgements as
the batches ShareFetch and ShareAcknowledge carry.

`GAP` marks an offset of an acquired range that the application never saw (a control record,
or an offset compaction removed); the other types are the application's.
"""

from __future__ import annotations

import enum
from typing import Mapping

GAP = 0


class AcknowledgeType(enum.IntEnum):
    """Java's AcknowledgeType: processed (ACCEPT), to be delivered again (RELEASE), unprocessable (REJECT)."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


def acknowledgement_batches(acknowledgements: Mapping[int, int]) -> list[tuple[int, int, list[int]]]:
    """(first offset, last offset, types) for runs of consecutive offsets: one type when the whole
    run has it, else one type per offset, as Kafka's clients send them."""
    batches: list[tuple[int, int, list[int]]] = []
    run: list[tuple[int, int]] = []
    for offset in sorted(acknowledgements):
        if run and offset != run[-1][0] + 1:
            batches.append(_batch(run))
            run = []
        run.append((offset, acknowledgements[offset]))
    if run:
        batches.append(_batch(run))
    return batches


def _batch(run: list[tuple[int, int]]) -> tuple[int, int, list[int]]:
    types = [kind for _, kind in run]
    return run[0][0], run[-1][0], types[:1] if len(set(types)) == 1 else types
