"""The history of a run, as Jepsen keeps it: every operation an `invoke` followed by its completion,
`ok` (it happened), `fail` (it certainly did not) or `info` (unknown: it may have happened), with
the time since the run began, the process that did it, and its value.

Operations (`f`) and their values:
    send     invoke [partition, value]; ok [partition, offset, value] with "latency" (s);
             info/fail [partition, value, error]
    poll     ok [[partition, offset, value], ...] (one poll's records, in the order received)
    assign   ok [partitions] (a consumer's partitions changed: per-process order restarts)
    nemesis  info {"fault": ..., "phase": "start"|"stop", ...} (process "nemesis")
    txn      the transactional workload's transactions, and `commit` its commit requests
             (tools.faults.txn_checker describes them)
A history is written as JSON lines, one operation a line, and read back by the checker.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any


class History:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ops: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.started

    def add(self, process: str, type_: str, f: str, value: Any, **extra: Any) -> dict[str, Any]:
        op = {"time": round(self.now(), 6), "process": process, "type": type_, "f": f, "value": value, **extra}
        with self._lock:
            op["index"] = len(self.ops)
            self.ops.append(op)
        return op

    def nemesis(self, fault: str, phase: str, **details: Any) -> None:
        self.add("nemesis", "info", "nemesis", {"fault": fault, "phase": phase, **details})

    def write(self, path: str) -> None:
        with self._lock, open(path, "w") as out:
            out.writelines(json.dumps(op) + "\n" for op in self.ops)


def read(path: str) -> list[dict[str, Any]]:
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def by_type(ops: Iterable[dict[str, Any]], f: str, type_: str) -> list[dict[str, Any]]:
    return [op for op in ops if op["f"] == f and op["type"] == type_]
