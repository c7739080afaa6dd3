"""A node refused by a peer's listener backs off as Kafka's clients do and logs the refusal once.

The peer here is a listener that accepts TCP and refuses every SASL login (SaslHandshake answered
UNSUPPORTED_SASL_MECHANISM), as a controller listener refuses a broker with the wrong mechanism;
it counts the connections it is offered."""

from __future__ import annotations

import asyncio
import logging
import random
import struct

import pytest

from gregor.broker.controller_channel import ControllerChannel
from gregor.broker.peer_channel import PeerChannel
from gregor.broker.reconnect_backoff import ReconnectBackoff
from gregor.broker.security.listener_security import OutboundSecurity
from gregor.protocol.backoff import ExponentialBackoff
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.headers import encode_response
from gregor.protocol.messages import FetchRequest, SaslHandshakeResponse

SECURITY = OutboundSecurity(mechanism="PLAIN", username="broker", password="wrong")


def test_backoff_doubles_to_its_cap_and_reports_each_reason_once() -> None:
    state = ReconnectBackoff(ExponentialBackoff(50, 1000, jitter=0))
    assert state.failed(0.0, "refused") is True
    waits = [state.wait_s(0.0)]
    for _ in range(6):
        assert state.failed(0.0, "refused") is False
        waits.append(state.wait_s(0.0))
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert state.failed(0.0, "timed out") is True
    assert state.succeeded() == 8
    assert state.wait_s(0.0) == 0 and state.failed(0.0, "refused") is True


def test_jitter_keeps_within_a_fifth() -> None:
    backoff = ExponentialBackoff(50, 1000, rng=random.Random(7))
    assert all(800 <= backoff.delay_ms(10) <= 1200 for _ in range(100))


class _RefusingListener:
    def __init__(self) -> None:
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            frame = await reader.readexactly(size)
            correlation_id = struct.unpack_from(">i", frame, 4)[0]
            response = SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=["SCRAM-SHA-512"])
            writer.write(b"".join(bytes(part) for part in encode_response(correlation_id, response, 17, 1)))
            await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


async def _refusing_listener() -> tuple[_RefusingListener, asyncio.base_events.Server, int]:
    listener = _RefusingListener()
    server = await asyncio.start_server(listener.serve, "127.0.0.1", 0)
    return listener, server, server.sockets[0].getsockname()[1]


def _refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "gregor.peer" and "cannot connect" in record.getMessage()]


def test_controller_channel_backs_off_and_logs_one_refusal(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> int:
        listener, server, port = await _refusing_listener()
        channel = ControllerChannel.over_sockets({1: ("127.0.0.1", port)}, SECURITY, "broker-2",
                                                 retry_backoff_ms=10, request_timeout_ms=500)
        with pytest.raises(KafkaError):
            await channel.send(FetchRequest(), 4, timeout_s=1.0)
        await channel.close()
        server.close()
        return listener.connections

    with caplog.at_level(logging.INFO, logger="gregor.peer"):
        connections = asyncio.run(scenario())
    # a retry every 10 ms would be ~100 connections; 50 ms doubling with ±20 % jitter allows at
    # most 6 attempts within a second (0, ≥40, ≥120, ≥280, ≥600 ms, and one more before 1.0 s at most)
    assert 3 <= connections <= 6, connections
    refusals = _refusals(caplog)
    assert len(refusals) == 1 and "does not offer SASL mechanism PLAIN (it offers SCRAM-SHA-512)" in refusals[0]
    assert caplog.records[0].levelno == logging.WARNING


def test_raft_peer_channel_sends_dropped_while_backing_off(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> int:
        listener, server, port = await _refusing_listener()
        channel = PeerChannel({1: ("127.0.0.1", port)}, "raft-2", lambda *answer: None, SECURITY)
        for correlation_id in range(100):  # a fetch every 10 ms for a second
            channel.send(1, correlation_id, FetchRequest(), 13)
            await asyncio.sleep(0.01)
        channel.close()
        server.close()
        return listener.connections

    with caplog.at_level(logging.INFO, logger="gregor.peer"):
        connections = asyncio.run(scenario())
    assert 3 <= connections <= 7, connections
    assert len(_refusals(caplog)) == 1
