"""benchmarks/hop_trace.py: its tracer must still find what it wraps in the broker (a renamed
method would leave every hop empty), and its chain of hops must be followed as docs/latency.md
describes it. No cluster is started and no time is judged."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import struct
import subprocess
import sys

from gregor.broker.network import KafkaConnection
from gregor.broker.peer_channel import PeerLink

from tests.unit.broker.test_connection_pipelining import Dispatcher, Transport

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "benchmarks", "hop_trace.py")
_spec = importlib.util.spec_from_file_location("hop_trace", SCRIPT)
assert _spec is not None and _spec.loader is not None
hop_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hop_trace)


def test_the_tracer_records_a_connections_reads_with_api_key_and_client_and_its_writes(tmp_path):
    connection_class = type("Traced", (KafkaConnection,), {})  # the broker's classes stay as they are
    link_class = type("TracedLink", (PeerLink,), {})
    recorder = hop_trace.Recorder(str(tmp_path))
    hop_trace.patch(connection_class, link_class, recorder)
    client = b"rdkafka"
    request = struct.pack(">hhih", 0, 9, 7, len(client)) + client
    frame = struct.pack(">i", len(request)) + request

    async def run() -> tuple[KafkaConnection, Transport]:
        connection = connection_class(Dispatcher(), "PLAINTEXT", 1 << 20)
        transport = Transport()
        connection.connection_made(transport)
        recorder.start()
        buffer = connection.get_buffer(len(frame))
        buffer[:len(frame)] = frame
        connection.buffer_updated(len(frame))
        recorder.dump()
        return connection, transport

    connection, transport = asyncio.run(run())
    kinds = [(kind, api_key) for _, _, kind, _, api_key, _ in recorder.events]
    assert kinds == [("write", -1), ("read", 0)] and transport.written  # the answer is written inside the read
    assert recorder.clients == {connection.connection_id: "rdkafka"}
    assert os.listdir(tmp_path) == [f"trace-{os.getpid()}.json"]
    assert link_class.data_received is not PeerLink.data_received


def test_a_records_hops_are_followed_from_the_produce_read_to_the_consumers_answer():
    us = 1000
    leader = {"clients": {"1": "rdkafka", "2": "rdkafka", "3": "replica-fetcher-2", "4": "replica-fetcher-3"},
              "events": [
                  (0, 200 * us, "read", 1, 0, 100),        # the produce request
                  (150 * us, 0, "write", 3, -1, 200),      # answers to the followers
                  (170 * us, 0, "write", 4, -1, 200),
                  (300 * us, 400 * us, "read", 2, 1, 90),  # the consumer's next fetch, parked
                  (700 * us, 800 * us, "read", 3, 1, 90),  # the followers' next fetches
                  (900 * us, 1100 * us, "read", 4, 1, 90),
                  (1050 * us, 0, "write", 2, -1, 200),     # the consumer's answer
              ]}
    follower_2 = {"clients": {}, "events": [(160 * us, 600 * us, "link read", 9092, -1, 200)]}
    follower_3 = {"clients": {}, "events": [(200 * us, 850 * us, "link read", 9092, -1, 200)]}
    durations, gaps = hop_trace.hops({10: leader, 11: follower_2, 12: follower_3})
    assert sorted(durations[hop_trace.HOPS[0]]) == [150 * us, 170 * us]
    assert sorted(durations[hop_trace.HOPS[2]]) == [440 * us, 650 * us]
    assert sorted(durations[hop_trace.HOPS[3]]) == [50 * us, 100 * us]
    assert durations[hop_trace.HOPS[5]] == [150 * us] and durations[hop_trace.HOPS[6]] == [1050 * us]
    assert gaps == [20 * us]


def test_bad_arguments_are_one_line():
    done = subprocess.run([sys.executable, SCRIPT, "--rate", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "0 is not positive" in done.stderr
