"""PeerLink: the pipelined peer connection the replica fetcher and raft use. Every request ends
in exactly one callback (its answer, or its failure), answers are matched by correlation id
whatever way the bytes are split, and a request over its timeout closes the connection and
fails what it carried, as Kafka's NetworkClient does."""

from __future__ import annotations

import asyncio
import struct

from gregor.broker.peer_channel import PeerLink
from gregor.protocol.headers import encode_response
from gregor.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

_SIZE = struct.Struct(">i")


class _Peer:
    """A server that answers ApiVersions requests as `answer` says: 'all' answers each at once,
    'split' answers two requests in one write cut mid-frame, 'mute' never answers."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests = 0
        self.connections = 0
        self._held: list[bytes] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                self.requests += 1
                correlation_id = struct.unpack_from(">i", frame, 4)[0]
                answer = b"".join(encode_response(correlation_id, ApiVersionsResponse(error_code=0), 18, 0))
                if self.answer == "all":
                    writer.write(answer)
                elif self.answer == "split":
                    self._held.append(answer)
                    if len(self._held) == 2:
                        both = b"".join(self._held)
                        self._held.clear()
                        writer.write(both[:7])
                        await writer.drain()
                        await asyncio.sleep(0.01)
                        writer.write(both[7:])
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def _run(answer: str, send, timeout_s: float | None = None):
    async def main():
        peer = _Peer(answer)
        port = await peer.start()
        answered: list[int] = []
        failed: list[int] = []
        link = PeerLink(("127.0.0.1", port), "test", lambda cid, _response: answered.append(cid), failed.extend)
        await send(link, port, timeout_s)
        link.close()
        peer.server.close()
        return peer, answered, failed

    return asyncio.run(main())


async def _two_then_wait(link: PeerLink, _port: int, timeout_s: float | None) -> None:
    link.send(1, ApiVersionsRequest(), 0, timeout_s)
    link.send(2, ApiVersionsRequest(), 0, timeout_s)
    await asyncio.sleep(0.3)


def test_answers_are_matched_by_correlation_id_even_split_across_reads():
    for answer in ("all", "split"):
        peer, answered, failed = _run(answer, _two_then_wait)
        assert answered == [1, 2] and failed == [] and peer.connections == 1


def test_a_request_over_its_timeout_fails_with_every_other_one_it_shared_the_connection_with():
    peer, answered, failed = _run("mute", _two_then_wait, timeout_s=0.1)
    assert answered == [] and sorted(failed) == [1, 2] and peer.requests == 2


def test_a_peer_that_cannot_be_reached_fails_every_request_sent_to_it():
    async def main() -> list[int]:
        failed: list[int] = []
        link = PeerLink(("127.0.0.1", 1), "test", lambda cid, _response: None, failed.extend)  # nothing on port 1
        link.send(1, ApiVersionsRequest(), 0)
        await asyncio.sleep(0.2)
        link.send(2, ApiVersionsRequest(), 0)  # refused at once while the dialer backs off, or tried again
        await asyncio.sleep(0.2)
        link.close()
        return failed

    assert asyncio.run(main()) == [1, 2]


def test_close_fails_what_is_still_waiting_and_nothing_answers_after_it():
    async def close_early(link: PeerLink, _port: int, _timeout: float | None) -> None:
        link.send(1, ApiVersionsRequest(), 0)
        await asyncio.sleep(0.2)
        link.close()
        await asyncio.sleep(0.1)

    peer, answered, failed = _run("mute", close_early)
    assert answered == [] and failed == [1] and peer.requests == 1
