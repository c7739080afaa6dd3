"""File regions (fetched record batches) reach the socket whole and in order on both event loops:
asyncio's native `loop.sendfile`, and uvloop, which has none, where the connection calls sendfile
itself while nothing is buffered and copies the rest in chunks, waiting on the transport's flow
control (the reader here is slow, so the copy path and the waiting are taken)."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import tempfile

import pytest
import uvloop

from gregor.broker.network import KafkaConnection, FileRegion
from gregor.storage.file_slice import FileSlice

SIZES = (100, 3 * 1024 * 1024 + 17)  # one that fits the socket buffer, one that cannot


class Dispatcher:
    """Answers request `i` with a 4-byte header naming it and the file's bytes behind it."""

    def __init__(self, file, size: int) -> None:
        self.file, self.size = file, size

    def step_done(self) -> None:
        pass  # nothing is left for the end of a step

    def dispatch(self, frame, info):
        header = struct.pack(">i", 4 + self.size) + bytes(frame)
        return [header, FileRegion([FileSlice(self.file, 0, self.size // 2),
                                    FileSlice(self.file, self.size // 2, self.size - self.size // 2)])]


async def exchange(size: int, requests: int) -> tuple[bytes, list[bytes]]:
    content = os.urandom(size)
    with tempfile.TemporaryFile() as raw:
        raw.write(content)
        raw.flush()
        file = open(raw.fileno(), "rb", buffering=0, closefd=False)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: KafkaConnection(Dispatcher(file, size), "PLAINTEXT", 1 << 20),
                                          "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        client.setblocking(False)
        try:
            for i in range(requests):
                await loop.sock_sendall(client, struct.pack(">i", 4) + struct.pack(">i", i))
            answers = []
            for _ in range(requests):
                await asyncio.sleep(0.01)  # a slow reader: the server's buffer fills
                (length,) = struct.unpack(">i", await _exactly(loop, client, 4))
                answers.append(await _exactly(loop, client, length))
            return content, answers
        finally:
            client.close()
            server.close()
            await server.wait_closed()


async def _exactly(loop, sock, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = await loop.sock_recv(sock, n - len(data))
        assert chunk, "the server closed the connection"
        data += chunk
    return bytes(data)


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
@pytest.mark.parametrize("size", SIZES)
def test_file_regions_arrive_whole_and_in_order(loop_name, size):
    main = exchange(size, requests=3)
    content, answers = uvloop.run(main) if loop_name == "uvloop" else asyncio.run(main)
    assert [answer[:4] for answer in answers] == [struct.pack(">i", i) for i in range(3)]
    assert all(answer[4:] == content for answer in answers)
