"""The history on one time axis, as a PNG: acknowledged sends and records read per second, the
latency of each acknowledged send, and the fault windows shaded, so a stall or a loss can be seen
against the fault that caused it. Needs matplotlib (a test dependency)."""

from __future__ import annotations

from collections import Counter
from typing import Any

COLOURS = {"kill": "tab:red", "pause": "tab:orange", "partition-leader": "tab:purple", "isolate-leader": "tab:green",
           "partition-controller": "tab:brown", "partition-client": "tab:pink", "partition-quorum": "tab:olive",
           "slow": "tab:cyan"}


def fault_windows(ops: list[dict[str, Any]]) -> list[tuple[str, float, float, str]]:
    """(fault, start, stop, description) of every fault; one still open ends at the last operation."""
    open_: dict[str, tuple[float, str]] = {}
    windows = []
    end = max((op["time"] for op in ops), default=0.0)
    for op in ops:
        if op["f"] != "nemesis":
            continue
        value = op["value"]
        key = f"{value['fault']} {value.get('node') or value.get('side')}-{value.get('other', '')}"
        if value["phase"] == "start":
            open_[key] = (op["time"], key)
        elif key in open_:
            start, description = open_.pop(key)
            windows.append((value["fault"], start, op["time"], description))
    windows += [(key.split()[0], start, end, key) for key, (start, _) in open_.items()]
    return windows


def plot(ops: list[dict[str, Any]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sent: Counter[int] = Counter()
    failed: Counter[int] = Counter()
    for op in ops:  # a transaction's sends count when it ends: committed, or aborted / unknown
        if op["type"] != "invoke" and op["f"] in ("send", "txn"):
            count = 1 if op["f"] == "send" else sum(micro[0] == "send" for micro in op["value"])
            (sent if op["type"] == "ok" else failed)[int(op["time"])] += count
    read: Counter[int] = Counter()
    for op in ops:
        if op["f"] == "poll" and op["type"] == "ok" and op["process"] != "final":
            read[int(op["time"])] += len(op["value"])
    latency = [(op["time"], op["latency"] * 1000) for op in ops
               if op["f"] in ("send", "txn") and op["type"] == "ok" and op.get("latency") is not None]
    figure, (rates, latencies) = plt.subplots(2, 1, sharex=True, figsize=(12, 6))
    seconds = range(int(max((op["time"] for op in ops), default=0)) + 1)
    rates.plot(seconds, [sent[s] for s in seconds], label="sends acknowledged (committed)/s", linewidth=1)
    rates.plot(seconds, [read[s] for s in seconds], label="records read/s", linewidth=1)
    rates.plot(seconds, [failed[s] for s in seconds], label="sends failed, aborted or unknown/s", linewidth=1)
    rates.set_ylabel("operations/s")
    if latency:
        latencies.scatter([t for t, _ in latency], [ms for _, ms in latency], s=1)
        latencies.set_yscale("log")
    latencies.set_ylabel("send / transaction latency (ms)")
    latencies.set_xlabel("seconds since the start")
    labelled: set[str] = set()
    for fault, start, stop, _ in fault_windows(ops):
        for axis in (rates, latencies):
            axis.axvspan(start, stop, alpha=0.2, color=COLOURS.get(fault, "grey"),
                         label=fault if axis is rates and fault not in labelled else None)
        labelled.add(fault)
    rates.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
