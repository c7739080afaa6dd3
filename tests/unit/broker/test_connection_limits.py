"""The network edge's input limits: announced frame sizes, connection counts and idle connections.

The frame tests drive a `KafkaConnection` with a fake transport; the count and idleness tests run a
`KafkaServer` on a loopback port with a dispatcher that echoes, and real sockets.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.network import ConnectionLimits, KafkaConnection, KafkaServer, SocketBuffers

MAX_REQUEST = 100 * 1024 * 1024  # socket.request.max.bytes' default


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str):
        return ("127.0.0.1", 5555) if name == "peername" else None

    def writelines(self, parts) -> None:
        self.written.append(b"".join(bytes(part) for part in parts))

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class Echo:
    """Answers a frame with its own bytes, size-prefixed; `hold` keeps an answer waiting."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.hold: asyncio.Future | None = None

    def step_done(self) -> None:
        pass  # nothing is left for the end of a step

    def dispatch(self, frame, info):
        self.frames.append(bytes(frame))
        answer = struct.pack(">i", len(frame)) + bytes(frame)
        if bytes(frame) == b"hold":
            self.hold = asyncio.get_running_loop().create_future()

            async def later():
                await self.hold
                return answer
            return later()
        return answer


def feed(connection: KafkaConnection, data: bytes) -> None:
    """Deliver `data` as the transport does: into the buffers get_buffer hands out."""
    view = memoryview(data)
    while view:
        buffer = connection.get_buffer(-1)
        n = min(len(buffer), len(view))
        buffer[:n] = view[:n]
        connection.buffer_updated(n)
        view = view[n:]


def connection_with(echo: Echo) -> tuple[KafkaConnection, Transport]:
    connection = KafkaConnection(echo, "PLAINTEXT", MAX_REQUEST)
    transport = Transport()
    connection.connection_made(transport)
    return connection, transport


def test_a_large_frame_announced_and_never_sent_allocates_nothing_for_it():
    async def run():
        connection, transport = connection_with(Echo())
        feed(connection, struct.pack(">i", MAX_REQUEST) + b"x" * 100)
        assert not transport.closed
        assert len(connection._buffer) <= 128 * 1024
    asyncio.run(run())


def test_the_buffer_grows_with_the_bytes_received_and_shrinks_after_the_frame():
    async def run():
        echo = Echo()
        connection, transport = connection_with(echo)
        frame = bytes(range(256)) * (3 * 4096)  # 3 MiB
        feed(connection, struct.pack(">i", len(frame)) + frame[:1024 * 1024])
        assert len(connection._buffer) < 2 * 1024 * 1024 + 64 * 1024
        feed(connection, frame[1024 * 1024:] + struct.pack(">i", 2) + b"ok")
        assert echo.frames == [frame, b"ok"]
        assert len(connection._buffer) <= 1024 * 1024
        assert transport.written and not transport.closed
    asyncio.run(run())


@pytest.mark.parametrize("announced", [2**31 - 1, 2**31, MAX_REQUEST + 1, -1],
                         ids=["2GB-1", "2GB (negative as int32)", "max+1", "-1"])
def test_a_frame_announced_over_socket_request_max_bytes_closes_the_connection(announced):
    async def run():
        echo = Echo()
        connection, transport = connection_with(echo)
        feed(connection, struct.pack(">I", announced & 0xFFFFFFFF))
        assert transport.closed and echo.frames == []
        assert len(connection._buffer) <= 128 * 1024
    asyncio.run(run())


# -- a real server: counts and idleness ---------------------------------------------------------------------------

async def open_connection(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def answered(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, payload: bytes = b"ping") -> bool:
    """True when the server echoes `payload`; False when it closed the connection."""
    try:
        writer.write(struct.pack(">i", len(payload)) + payload)
        await writer.drain()
        header = await asyncio.wait_for(reader.readexactly(4), 5)
        return await reader.readexactly(struct.unpack(">i", header)[0]) == payload
    except (asyncio.IncompleteReadError, ConnectionError):
        return False


async def closed_by_server(reader: asyncio.StreamReader, within_s: float = 5) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), within_s) == b""
    except ConnectionError:
        return True


async def serving(limits: ConnectionLimits) -> tuple[KafkaServer, int]:
    server = KafkaServer(Echo(), MAX_REQUEST, limits)
    port = await server.listen("PLAINTEXT", "127.0.0.1", 0)
    return server, port


def test_connections_over_max_connections_are_closed_and_a_freed_slot_is_reused():
    async def run():
        server, port = await serving(ConnectionLimits(max_connections=3))
        kept = [await open_connection(port) for _ in range(3)]
        assert all([await answered(r, w) for r, w in kept])
        extra_reader, extra_writer = await open_connection(port)
        assert await closed_by_server(extra_reader)
        kept[0][1].close()
        await asyncio.sleep(0.1)
        reader, writer = await open_connection(port)
        assert await answered(reader, writer)
        assert all([await answered(r, w) for r, w in kept[1:]])
        await server.close()
    asyncio.run(run())


def test_connections_over_max_connections_per_ip_are_closed_and_overrides_apply():
    async def run():
        server, port = await serving(ConnectionLimits(max_per_ip=2))
        kept = [await open_connection(port) for _ in range(2)]
        reader, _ = await open_connection(port)
        assert await closed_by_server(reader)
        assert all([await answered(r, w) for r, w in kept])
        await server.close()
        server, port = await serving(ConnectionLimits(max_per_ip=1, per_ip_overrides={"127.0.0.1": 3}))
        kept = [await open_connection(port) for _ in range(3)]
        assert all([await answered(r, w) for r, w in kept])
        reader, _ = await open_connection(port)
        assert await closed_by_server(reader)
        await server.close()
    asyncio.run(run())


def test_idle_connections_are_reaped_and_busy_or_active_ones_are_not():
    async def run():
        server, port = await serving(ConnectionLimits(max_idle_ms=300))
        idle_reader, _ = await open_connection(port)
        half_reader, half_writer = await open_connection(port)
        half_writer.write(struct.pack(">i", 1000) + b"slow")  # a frame begun and never finished
        active = await open_connection(port)
        waiting_reader, waiting_writer = await open_connection(port)
        waiting_writer.write(struct.pack(">i", 4) + b"hold")  # a request whose answer takes long
        for _ in range(8):
            await asyncio.sleep(0.1)
            assert await answered(*active)
        assert await closed_by_server(idle_reader, 1)
        assert await closed_by_server(half_reader, 1)
        assert not waiting_reader.at_eof()
        server._dispatcher.hold.set_result(None)
        assert struct.unpack(">i", await waiting_reader.readexactly(4))[0] == 4
        assert await waiting_reader.readexactly(4) == b"hold"
        assert await closed_by_server(waiting_reader, 2)  # idle again after its answer
        await server.close()
    asyncio.run(run())


def test_the_limits_come_from_kafkas_keys():
    limits = BrokerConfig({"max.connections": "10", "max.connections.per.ip": "4",
                           "max.connections.per.ip.overrides": "127.0.0.1:8, [::1]:2",
                           "connections.max.idle.ms": "1000"}).connection_limits()
    assert limits == ConnectionLimits(10, 4, {"127.0.0.1": 8, "::1": 2}, 1000)
    assert BrokerConfig().connection_limits() == ConnectionLimits(2**31 - 1, 2**31 - 1, {}, 600_000)
    with pytest.raises(ConfigError, match="address:count"):
        BrokerConfig({"max.connections.per.ip.overrides": "127.0.0.1"})
    with pytest.raises(ConfigError, match="at least 0"):
        BrokerConfig({"max.connections": "-1"})


def test_a_slow_sender_that_keeps_sending_is_not_reaped_and_is_answered():
    """As in Kafka, only idleness closes a connection: a frame trickling in a byte at a time, each
    within connections.max.idle.ms of the last, is read to its end and answered."""
    async def run():
        server, port = await serving(ConnectionLimits(max_idle_ms=300))
        reader, writer = await open_connection(port)
        frame = struct.pack(">i", 6) + b"trickl"
        for byte in frame:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.1)
        assert await reader.readexactly(10) == frame
        assert await closed_by_server(reader, 2)  # and reaped once it stops
        await server.close()
    asyncio.run(run())


def test_accepted_connections_get_the_listeners_socket_buffer_sizes():
    """socket.send.buffer.bytes / socket.receive.buffer.bytes are set on every accepted socket,
    the receive size on the listening one too; -1 (Gregor's default) leaves the OS's."""
    import socket

    config = BrokerConfig({"socket.send.buffer.bytes": "102400",
                           "listener.name.plaintext.socket.receive.buffer.bytes": "32768"})
    assert config.socket_buffers("PLAINTEXT") == SocketBuffers(102400, 32768)
    assert config.socket_buffers("OTHER") == SocketBuffers(102400, -1)
    assert BrokerConfig().socket_buffers("PLAINTEXT") == SocketBuffers(-1, -1)

    async def sizes(buffers: SocketBuffers) -> tuple[int, int]:
        server = KafkaServer(Echo(), MAX_REQUEST, ConnectionLimits())
        port = await server.listen("PLAINTEXT", "127.0.0.1", 0, buffers=buffers)
        reader, writer = await open_connection(port)
        assert await answered(reader, writer)
        (connection,) = server.connections
        sock = connection._transport.get_extra_info("socket")
        found = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), sock.getsockopt(socket.SOL_SOCKET,
                                                                                        socket.SO_RCVBUF)
        writer.close()
        await server.close()
        return found

    default = asyncio.run(sizes(SocketBuffers()))
    # Linux reports twice the size asked for (its bookkeeping overhead)
    assert asyncio.run(sizes(SocketBuffers(65536, 32768))) == (2 * 65536, 2 * 32768) != default
