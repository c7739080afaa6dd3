"""Jepsen's transactional anomalies for Kafka, computed from a transactional history
(tools.faults.txn_workload), on top of the queue anomalies (tools.faults.checker) of the committed
writes and of every read:

    G1a                 aborted read: a read_committed consumer saw a value written by a transaction
                        that aborted, or whose commit was never requested
    pre-committed-read  a read of a value that completed before its transaction's commit was requested
    G1c                 cyclic information flow over the dependencies Kafka does order: write-read
                        (T2 read a value T1 wrote) and one transactional id's transactions in turn
                        (they never interleave). read_committed forbids such a cycle: every read value
                        was committed before it was read.
    G0-log, G1c-log     Jepsen's write cycles and write/read cycles with write-write dependencies in
                        log order (T1 -> T2 when T2's write follows T1's in a partition). Kafka lets
                        open transactions of different producers interleave in a log, so log order is
                        not a commit order and these cycles are allowed (Jepsen found them in Kafka
                        and Redpanda): counted, printed, not failures.

G1b (intermediate read) has no counterpart: a send appends a new value, nothing is overwritten; a
reader seeing part of a committed transaction and skipping the rest is a poll-skip or a loss.

History: `txn` invoke [["send", partition, None, value], ...]; ok / fail (certainly aborted) / info
(unknown) [["poll", [[partition, offset, value], ...]], ["send", partition, offset, value], ...];
`commit` invoke before each commit request; `poll`, `assign` and `nemesis` as in the queue history
(a transaction's own reads are also `poll` operations of its process, recorded as they happen).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

from tools.faults.checker import ANOMALIES, Report, check

TXN_ANOMALIES = ("G1a", "pre-committed-read", "G1c", "G0-log", "G1c-log")
ALLOWED = ("G0-log", "G1c-log")


def check_txn(ops: Iterable[dict[str, Any]]) -> Report:
    ops = sorted(ops, key=lambda op: op["index"])
    found: dict[str, list[Any]] = {name: [] for name in TXN_ANOMALIES}
    writer: dict[int, int] = {}  # value -> the index of its transaction's completion
    status: dict[int, str] = {}  # transaction -> ok / fail / info
    commit_requested: dict[int, int] = {}  # transaction -> index of its (last) commit invoke
    process_of: dict[int, str] = {}
    reads_of: dict[int, list[int]] = {}  # transaction -> the values it read
    last_commit: dict[str, int] = {}  # process -> its latest commit invoke
    queue: list[dict[str, Any]] = []
    for op in ops:
        if op["f"] == "commit":
            last_commit[op["process"]] = op["index"]
        elif op["f"] == "txn" and op["type"] != "invoke":
            txn = op["index"]
            status[txn], process_of[txn] = op["type"], op["process"]
            reads_of[txn] = [value for micro in op["value"] if micro[0] == "poll" for _, _, value in micro[1]]
            commit = last_commit.pop(op["process"], None)
            if commit is not None:
                commit_requested[txn] = commit
            sends = [micro for micro in op["value"] if micro[0] == "send"]
            for i, (_, partition, offset, value) in enumerate(sends):
                writer[value] = txn
                if op["type"] == "ok" and offset is not None:
                    queue.append({**op, "index": txn + i / (len(sends) + 1), "f": "send",
                                  "value": [partition, offset, value]})
                elif op["type"] != "fail":
                    queue.append({**op, "index": txn + i / (len(sends) + 1), "f": "send",
                                  "value": [partition, value, "indeterminate"]})
        elif op["f"] in ("assign", "nemesis"):
            queue.append(op)
    aborted = {value for value, txn in writer.items() if status[txn] == "fail"}
    for op in ops:  # reads of aborted values are G1a, below; the queue checker sees the rest
        if op["f"] == "poll" and op["type"] == "ok":
            queue.append({**op, "value": [record for record in op["value"] if record[2] not in aborted]})
    report = check(queue)
    for op in ops:
        if op["f"] != "poll" or op["type"] != "ok":
            continue
        for partition, offset, value in op["value"]:
            txn = writer.get(value)
            if txn is None:
                continue
            if status[txn] == "fail" or txn not in commit_requested:
                found["G1a"].append({"process": op["process"], "value": value, "partition": partition,
                                     "offset": offset, "writer": process_of[txn], "writer-status": status[txn]})
            elif op["index"] < commit_requested[txn]:
                found["pre-committed-read"].append({"process": op["process"], "value": value,
                                                    "read-at": op["index"], "commit-at": commit_requested[txn]})
    _cycles(ops, writer, status, process_of, reads_of, found)
    counts = {**report.counts, **{name: len(items) for name, items in found.items()}}
    return Report(counts, {**report.examples, **found}, report.acknowledged, report.indeterminate,
                  report.read_values, report.polls, report.faults, names=ANOMALIES + TXN_ANOMALIES, allowed=ALLOWED)


def _cycles(ops: list[dict[str, Any]], writer: dict[int, int], status: dict[int, str], process_of: dict[int, str],
            reads_of: dict[int, list[int]], found: dict[str, list[Any]]) -> None:
    """Dependency graphs over the transactions that may have committed (ok, or info and read)."""
    read_values = {value for txn_reads in reads_of.values() for value in txn_reads}
    read_values |= {value for op in ops if op["f"] == "poll" and op["type"] == "ok" for _, _, value in op["value"]}
    live = {txn for txn, kind in status.items()
            if kind == "ok" or (kind == "info" and any(writer.get(v) == txn for v in read_values))}
    wr: set[tuple[int, int]] = set()
    for txn in live:
        for value in reads_of[txn]:
            source = writer.get(value)
            if source is not None and source != txn and source in live:
                wr.add((source, txn))
    turns: set[tuple[int, int]] = set()
    previous: dict[str, int] = {}
    for txn in sorted(live):
        if process_of[txn] in previous:
            turns.add((previous[process_of[txn]], txn))
        previous[process_of[txn]] = txn
    ww: set[tuple[int, int]] = set()
    at: dict[int, list[tuple[int, int]]] = defaultdict(list)  # partition -> (offset, writer)
    for op in ops:
        places = []
        if op["f"] == "poll" and op["type"] == "ok":
            places = [(p, o, v) for p, o, v in op["value"]]
        elif op["f"] == "txn" and op["type"] == "ok":
            places = [(m[1], m[2], m[3]) for m in op["value"] if m[0] == "send" and m[2] is not None]
        for partition, offset, value in places:
            if writer.get(value) in live:
                at[partition].append((offset, writer[value]))
    for entries in at.values():
        ordered = sorted(set(entries))
        for (_, first), (_, second) in pairwise(ordered):
            if first != second:
                ww.add((first, second))
    _report_cycles(wr | turns, wr, "G1c", process_of, found)
    _report_cycles(ww, ww, "G0-log", process_of, found)
    _report_cycles(ww | wr, wr, "G1c-log", process_of, found)


def _report_cycles(edges: set[tuple[int, int]], marked: set[tuple[int, int]], name: str,
                   process_of: dict[int, str], found: dict[str, list[Any]]) -> None:
    """One anomaly per strongly connected component with a `marked` edge inside (an edge inside a
    component lies on a cycle)."""
    component = _components(edges)
    members: defaultdict[int, set[int]] = defaultdict(set)
    for source, target in marked:
        if component.get(source) is not None and component.get(source) == component.get(target):
            members[component[source]] |= {source, target}
    for txns in members.values():
        found[name].append({"transactions": [(txn, process_of[txn]) for txn in sorted(txns)][:10],
                            "size": len(txns)})


def _components(edges: set[tuple[int, int]]) -> dict[int, int]:
    """Tarjan's strongly connected components, iteratively: node -> component id, for nodes on a cycle
    or not (a component of one node has no edge inside unless a self-loop, which is never added)."""
    graph: defaultdict[int, list[int]] = defaultdict(list)
    for source, target in edges:
        graph[source].append(target)
        graph.setdefault(target, [])
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    component: dict[int, int] = {}
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if child < len(graph[node]):
                work.append((node, child + 1))
                target = graph[node][child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = node
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return component
