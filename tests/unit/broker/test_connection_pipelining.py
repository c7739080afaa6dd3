"""The connection's ordering rules: answers leave in request order; a request that only waits for
its answer (`Pipelined`, an appended acks=all produce) lets the next requests be dispatched, any
other waiting request holds them back (Kafka's muted channel), and the number of answers
outstanding is bounded."""

from __future__ import annotations

import asyncio
import struct
from typing import Callable

from gregor.broker.network import _MAX_PIPELINED, CloseConnection, KafkaConnection, LaterAnswer, Pipelined


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.paused = False
        self.closed = False

    def get_extra_info(self, name: str):
        return ("127.0.0.1", 5555) if name == "peername" else None

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def writelines(self, parts) -> None:
        self.written.append(b"".join(bytes(part) for part in parts))

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def close(self) -> None:
        self.closed = True


class Dispatcher:
    """Answers frame `name` as the test arranged: at once, pipelined or blocking on a future."""

    def __init__(self) -> None:
        self.dispatched: list[bytes] = []
        self.pending: dict[bytes, asyncio.Future] = {}
        self.kinds: dict[bytes, str] = {}
        self.steps: list[int] = []  # how many requests were dispatched when each step ended
        self.at_step_end: Callable[[], None] | None = None

    def step_done(self) -> None:
        self.steps.append(len(self.dispatched))
        if self.at_step_end is not None:
            self.at_step_end()

    def dispatch(self, frame, info):
        name = bytes(frame)
        self.dispatched.append(name)
        kind = self.kinds.get(name, "now")
        if kind == "now":
            return b"answer " + name
        if kind == "close":
            raise CloseConnection("refused")
        if kind == "later":
            answer = self.pending[name] = LaterAnswer()
            return answer
        future = self.pending[name] = asyncio.get_running_loop().create_future()

        async def later():
            return b"answer " + await future
        return Pipelined(later()) if kind == "pipelined" else later()


def connect() -> tuple[KafkaConnection, Transport, Dispatcher]:
    dispatcher = Dispatcher()
    connection = KafkaConnection(dispatcher, "PLAINTEXT", 1 << 20)
    transport = Transport()
    connection.connection_made(transport)
    return connection, transport, dispatcher


def receive(connection: KafkaConnection, *names: bytes) -> None:
    data = b"".join(struct.pack(">i", len(name)) + name for name in names)
    buffer = connection.get_buffer(len(data))
    buffer[:len(data)] = data
    connection.buffer_updated(len(data))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_requests_behind_a_pipelined_answer_are_dispatched_and_answered_in_order():
    async def run():
        connection, transport, dispatcher = connect()
        dispatcher.kinds = {b"p1": "pipelined", b"p2": "pipelined"}
        receive(connection, b"p1", b"p2", b"m3")
        assert dispatcher.dispatched == [b"p1", b"p2", b"m3"]  # nothing waited for p1's answer
        assert transport.written == [] and connection.queued == 3
        dispatcher.pending[b"p2"].set_result(b"p2")
        await settle()
        assert transport.written == []  # p2 and m3 are ready, but p1 goes first
        dispatcher.pending[b"p1"].set_result(b"p1")
        await settle()
        assert transport.written == [b"answer p1answer p2answer m3"]  # ready together: one write
        assert connection.queued == 0
    asyncio.run(run())


def test_a_waiting_request_that_is_not_pipelined_holds_the_next_ones_back():
    async def run():
        connection, transport, dispatcher = connect()
        dispatcher.kinds = {b"f1": "blocking"}
        receive(connection, b"f1", b"m2")
        assert dispatcher.dispatched == [b"f1"]
        dispatcher.pending[b"f1"].set_result(b"f1")
        await settle()
        assert dispatcher.dispatched == [b"f1", b"m2"]
        assert transport.written == [b"answer f1", b"answer m2"]
    asyncio.run(run())


def test_a_blocking_request_behind_pipelined_ones_waits_for_its_own_answer_only():
    async def run():
        connection, transport, dispatcher = connect()
        dispatcher.kinds = {b"p1": "pipelined", b"f2": "blocking"}
        receive(connection, b"p1", b"f2", b"m3")
        assert dispatcher.dispatched == [b"p1", b"f2"]
        dispatcher.pending[b"f2"].set_result(b"f2")
        await settle()
        assert dispatcher.dispatched == [b"p1", b"f2"]  # f2 is answered only after p1
        dispatcher.pending[b"p1"].set_result(b"p1")
        await settle()
        assert dispatcher.dispatched == [b"p1", b"f2", b"m3"]
        assert b"".join(transport.written) == b"answer p1answer f2answer m3"
    asyncio.run(run())


def test_outstanding_answers_are_bounded():
    async def run():
        connection, transport, dispatcher = connect()
        names = [b"p%d" % index for index in range(_MAX_PIPELINED + 3)]
        dispatcher.kinds = {name: "pipelined" for name in names}
        receive(connection, *names)
        assert len(dispatcher.dispatched) == _MAX_PIPELINED
        dispatcher.pending[names[0]].set_result(names[0])
        await settle()
        assert len(dispatcher.dispatched) == _MAX_PIPELINED + 1
        for name in names[1:]:
            if not dispatcher.pending[name].done():
                dispatcher.pending[name].set_result(name)
            await settle()
        assert b"".join(transport.written) == b"".join(b"answer " + name for name in names)
    asyncio.run(run())


def test_a_lost_connection_cancels_the_answers_still_waiting():
    async def run():
        connection, transport, dispatcher = connect()
        dispatcher.kinds = {b"p1": "pipelined"}
        receive(connection, b"p1")
        connection.connection_lost(None)
        assert connection.queued == 0
        if not dispatcher.pending[b"p1"].done():
            dispatcher.pending[b"p1"].set_result(b"p1")
        await settle()
        assert transport.written == []
    asyncio.run(run())


def test_answers_given_at_once_to_requests_read_together_go_out_in_one_write():
    async def run():
        connection, transport, dispatcher = connect()
        receive(connection, b"m1", b"m2", b"m3")
        assert transport.written == [b"answer m1answer m2answer m3"]
    asyncio.run(run())


def test_each_step_of_dispatching_ends_with_step_done_even_when_the_connection_closes():
    """The dispatcher's gathered work (acks=all appends) is carried out when the connection has
    dispatched what it can: after a read's requests, after a blocking answer releases the next
    ones, and before a refused request closes the connection."""
    async def run():
        connection, transport, dispatcher = connect()
        dispatcher.kinds = {b"p1": "pipelined", b"f2": "blocking", b"x4": "close"}
        receive(connection, b"p1", b"f2", b"m3")
        assert dispatcher.steps == [2]  # p1 and f2 dispatched, m3 waits for f2's answer
        dispatcher.pending[b"p1"].set_result(b"p1")
        dispatcher.pending[b"f2"].set_result(b"f2")
        await settle()
        assert dispatcher.dispatched == [b"p1", b"f2", b"m3"] and dispatcher.steps[-1] == 3
        receive(connection, b"x4", b"m5")
        assert dispatcher.dispatched[-1] == b"x4" and dispatcher.steps[-1] == 4
    asyncio.run(run())


def test_a_later_answer_given_during_another_connections_step_goes_out_when_that_step_ends():
    """An append wakes a follower's parked fetch (a produce connection's step gives the answer of a
    follower's connection): it is written before the loop reads any other connection, not a
    loop iteration later."""
    async def run():
        follower, follower_transport, follower_dispatcher = connect()
        follower_dispatcher.kinds = {b"fetch": "later"}
        receive(follower, b"fetch")
        producer, producer_transport, producer_dispatcher = connect()
        producer_dispatcher.at_step_end = lambda: follower_dispatcher.pending[b"fetch"].set_result(b"records")
        receive(producer, b"produce")
        assert follower_transport.written == [b"records"], "written as the producer's step ended"
        assert producer_transport.written == [b"answer produce"]
        await settle()
        assert follower_transport.written == [b"records"], "and only once"
    asyncio.run(run())


def test_a_later_answer_given_outside_any_step_goes_out_in_the_next_loop_iteration():
    async def run():
        connection, transport, dispatcher = connect()
        dispatcher.kinds = {b"fetch": "later"}
        receive(connection, b"fetch")
        dispatcher.pending[b"fetch"].set_result(b"expired")  # a timer's: no connection's step ends
        assert transport.written == []
        await asyncio.sleep(0)
        assert transport.written == [b"expired"]
    asyncio.run(run())
