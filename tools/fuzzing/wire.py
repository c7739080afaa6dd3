"""Mutated request frames sent to a running broker over TCP: every frame must be answered or its
connection closed, and the broker must neither die nor log a handler crash.

A handler that raised would surface in the broker's log as asyncio's "Fatal error: protocol
.buffer_updated() call failed" (the connection is closed, other clients go on); `CRASH_MARKERS`
are the lines a caller looks for afterwards.
"""

from __future__ import annotations

import random
import socket
import struct
from collections import Counter
from dataclasses import dataclass, field

from tools.fuzzing import corpus
from tools.fuzzing.mutator import mutate

CRASH_MARKERS = ("Fatal error", "Traceback", "Task exception was never retrieved")
# APIs whose mutated requests would change the cluster under the caller's feet (delete records or
# topics, reconfigure, elect leaders, move replicas): not sent here (their decoders are fuzzed
# offline like every other's), so that the well-behaved client afterwards sees the same cluster.
DESTRUCTIVE = frozenset({20, 21, 33, 43, 44, 45})


@dataclass
class WireReport:
    sent: int = 0
    outcomes: Counter = field(default_factory=Counter)


def _read_answer(sock: socket.socket) -> str:
    try:
        header = sock.recv(4)
        if len(header) < 4:
            return "closed"
        size = struct.unpack(">i", header)[0]
        remaining = size
        while remaining > 0:
            chunk = sock.recv(min(remaining, 1 << 16))
            if not chunk:
                return "closed mid-answer"
            remaining -= len(chunk)
        return "answered"
    except socket.timeout:
        return "no answer yet"
    except ConnectionError:
        return "closed"


def fuzz_broker(port: int, frames: int, seed: int = 0, timeout_s: float = 2.0) -> WireReport:
    """Send `frames` mutated request frames of every advertised API, each on its own connection."""
    rng = random.Random(seed)
    seeds = [s for s in corpus.request_seeds(rng, per_version=1) if s.api_key not in DESTRUCTIVE]
    report = WireReport()
    for _ in range(frames):
        seed = rng.choice(seeds)
        frame = mutate(seed.frame, rng, rng.choice(seeds).frame)
        if len(frame) >= 2 and struct.unpack_from(">h", frame)[0] in DESTRUCTIVE:
            continue
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            try:
                sock.sendall(struct.pack(">i", len(frame)) + frame)
            except ConnectionError:
                report.outcomes["closed"] += 1
                continue
            report.outcomes[_read_answer(sock)] += 1
        report.sent += 1
    return report
