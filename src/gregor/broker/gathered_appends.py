"""The acks=all produce appends of one connection step, written together at its end.

A client with `linger.ms=0` sends a produce request per record and keeps many in flight, so a
busy leader reads several from one socket read. Appended one by one, each pays a log write, a
high-watermark check, a wake-up of the fetches waiting on the partition and a new deadline: per
request costs that make a saturated leader fall further behind as requests pile up. Gathered here
and appended when the connection's step ends (`flush`, called by the dispatcher), the requests of
a step pay those once per partition, in request order (`Partition.append_many_as_leader`), each
keeping its own outcome. Only acks=all appends are gathered: their answers wait for the followers
anyway, so appending them at the end of the step delays no answer. The dispatcher flushes before
any request of another API and the produce handler before an append it answers at once, so no
request finds the log behind its order.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, NamedTuple

from gregor.replication.effects import Effect
from gregor.replication.partition import Partition
from gregor.storage.log import AppendInfo

log = logging.getLogger("gregor.produce")

#: Told the outcome of a gathered append: its AppendInfo, or the error the append raised.
Outcome = Callable[[AppendInfo | Exception], None]
#: Told a request's share of the time its partition's flush took (seconds) and the time (ms), for
#: the request-time quota, which no longer sees that work in the handler's time.
Charge = Callable[[float, int], object]


class _Gathered(NamedTuple):
    records: memoryview | bytes
    now_ms: int
    timeout_ms: int
    token: object
    outcome: Outcome
    charge: Charge | None


class GatheredAppends:
    """Acks=all appends waiting for the end of their step, per partition in arrival order;
    `on_leader_append` (`PartitionHost.on_leader_append`) wakes what waits for a partition's new
    records and carries out the effects of its waiting appends."""

    def __init__(self, on_leader_append: Callable[[Partition, list[Effect]], None]) -> None:
        self._on_leader_append = on_leader_append
        self._pending: dict[Partition, list[_Gathered]] = {}

    @property
    def pending(self) -> bool:
        """Whether appends wait for `flush`."""
        return bool(self._pending)

    def add(self, partition: Partition, records: memoryview | bytes, now_ms: int, timeout_ms: int,
            token: object, outcome: Outcome, charge: Charge | None = None) -> None:
        """Append `records` as leader at the end of the step; `outcome` is told how that went
        first, then `token` (as `Partition.await_replication`'s) once the high watermark passes
        the records or the wait fails; `charge`, the request's share of the append's time."""
        entry = _Gathered(records, now_ms, timeout_ms, token, outcome, charge)
        pending = self._pending.get(partition)
        if pending is None:
            self._pending[partition] = [entry]
        else:
            pending.append(entry)

    def flush(self) -> None:
        """Append what was gathered: one `append_many_as_leader` and one wake-up per partition."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for partition, entries in pending.items():
            now_ms = entries[-1].now_ms
            started = time.perf_counter()
            try:
                outcomes = partition.append_many_as_leader([entry.records for entry in entries], now_ms,
                                                           required_acks=-1, from_client=True)
            except Exception as error:  # noqa: BLE001 - every waiting request is answered, none hangs
                log.exception("appending %d gathered produce requests to %s-%d failed", len(entries),
                              partition.topic, partition.index)
                outcomes = [error] * len(entries)
            effects: list[Effect] = []
            appended = False
            for entry, outcome in zip(entries, outcomes):
                entry.outcome(outcome)
                if isinstance(outcome, AppendInfo):
                    appended = True
                    effects.extend(partition.await_replication(outcome, entry.token, entry.now_ms, entry.timeout_ms))
            if appended:
                self._on_leader_append(partition, effects)
            share = (time.perf_counter() - started) / len(entries)
            for entry in entries:
                if entry.charge is not None:
                    entry.charge(share, now_ms)
