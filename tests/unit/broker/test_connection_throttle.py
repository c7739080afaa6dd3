"""A throttled answer (a client over its quota) is sent at once, and the connection dispatches no
further request of the client until the throttle time has passed (KIP-219's muted channel); a
throttled request without an answer (acks=0) mutes it all the same."""

from __future__ import annotations

import asyncio

from gregor.broker.network import KafkaConnection, Throttled
from tests.unit.broker.test_connection_pipelining import Dispatcher, Transport, receive, settle

DELAY_MS = 50


class ThrottlingDispatcher(Dispatcher):
    def dispatch(self, frame, info):
        answer = super().dispatch(frame, info)
        name = bytes(frame)
        if name.startswith(b"over"):
            return Throttled(None if name.endswith(b"silent") else answer, DELAY_MS)
        return answer


def connect() -> tuple[KafkaConnection, Transport, ThrottlingDispatcher]:
    dispatcher = ThrottlingDispatcher()
    connection = KafkaConnection(dispatcher, "PLAINTEXT", 1 << 20)
    transport = Transport()
    connection.connection_made(transport)
    return connection, transport, dispatcher


def test_the_answer_goes_out_and_the_next_request_waits_for_the_throttle_time():
    async def run():
        connection, transport, dispatcher = connect()
        receive(connection, b"over-1", b"m2")
        assert transport.written == [b"answer over-1"]
        assert dispatcher.dispatched == [b"over-1"]
        await settle()
        assert dispatcher.dispatched == [b"over-1"]  # muted
        await asyncio.sleep(DELAY_MS / 1000 * 3)
        assert dispatcher.dispatched == [b"over-1", b"m2"]
        assert transport.written == [b"answer over-1", b"answer m2"]
    asyncio.run(run())


def test_a_throttled_request_without_an_answer_still_mutes_the_connection():
    async def run():
        connection, transport, dispatcher = connect()
        receive(connection, b"over-silent", b"m2")
        await settle()
        assert transport.written == [] and dispatcher.dispatched == [b"over-silent"]
        await asyncio.sleep(DELAY_MS / 1000 * 3)
        assert transport.written == [b"answer m2"]
    asyncio.run(run())


def test_a_lost_connection_cancels_its_mute():
    async def run():
        connection, _, _ = connect()
        receive(connection, b"over-1", b"m2")
        assert connection._muted is not None
        connection.connection_lost(None)
        assert connection._muted is None
    asyncio.run(run())
