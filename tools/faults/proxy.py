"""A userspace TCP proxy in front of every node's listener, with directed links that can be cut,
slowed and healed: network partitions without privileges (no netns, no iptables), so they run in CI.

Every node listens on a private port and is reached only through its proxy port: brokers advertise
the proxy port (`advertised.listeners`), controllers are named by it in `controller.quorum.voters`,
clients bootstrap through it. The proxy sees every connection to a node; it names the connecting
side by the process that owns the connecting socket (Linux `/proc/net/tcp` gives the socket's
inode for the peer's port, `/proc/<pid>/fd` the process that holds it; both readable for one's own
processes). A process that is no registered node is "client".

A link is directed, `src -> dst`, and governs the bytes `src` sends to `dst` on any connection
between them, whichever side opened it: cutting `a -> b` alone is a one-way partition (b no longer
hears a; a still hears b). A cut link stops forwarding (the bytes wait, TCP's flow control stalls
the sender, new connections are accepted and then hear nothing), which is what a dropped route
looks like to the endpoints: they notice only by their own timeouts. With `reset=True` the cut
also closes the link's open connections, as a rebooted switch or a firewall's RST would. A slow
link delays each chunk it forwards. Healing forwards what waited.

Design limits (what a netns/veth variant would add): connections are made to the proxy, so the
kernel never refuses or times out a SYN (a cut looks like a peer that accepted and went silent,
not like an unreachable host); loss is per link, not per packet (no reordering, no partial loss);
the proxy costs one more copy per hop. Network namespaces with veth pairs and `tc netem` would give
packet-level loss, delay jitter and unreachable hosts, at the price of root (CAP_NET_ADMIN).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import defaultdict
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

CLIENT = "client"
CHUNK = 65536
T = TypeVar("T")


@dataclass
class _Link:
    """One direction: open (forwarding) unless cut; `delay_s` added before each chunk."""

    open: asyncio.Event = field(default_factory=asyncio.Event)
    delay_s: float = 0.0
    connections: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = field(default_factory=set)


class Proxy:
    """The proxies of a cluster, on one event loop in a thread of their own."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.pids: dict[str, int] = {}  # node name -> pid of its current process
        self._upstream: dict[str, int] = {}  # node name -> the node's own port
        self.ports: dict[str, int] = {}  # node name -> proxy port
        self._servers: list[asyncio.AbstractServer] = []
        self._links: dict[tuple[str, str], _Link] = {}
        self.connections: defaultdict[tuple[str, str], int] = defaultdict(int)  # (src, dst) -> accepted
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._thread.start()

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the proxy's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)

    def reserve(self, name: str) -> int:
        """A proxy port for node `name`, listening now; its target is set by `target` before use."""
        return self._call(self._listen(name))

    def target(self, name: str, port: int) -> None:
        self._upstream[name] = port

    async def _listen(self, name: str) -> int:
        server = await asyncio.start_server(lambda r, w: self._accept(name, r, w), self.host, 0)
        self._servers.append(server)
        port = int(server.sockets[0].getsockname()[1])
        self.ports[name] = port
        return port

    def _link(self, src: str, dst: str) -> _Link:
        link = self._links.get((src, dst))
        if link is None:
            link = self._links[(src, dst)] = _Link()
            link.open.set()
        return link

    # --- faults (called from any thread) ------------------------------------------------------

    def cut(self, src: str, dst: str, reset: bool = False) -> None:
        """Stop forwarding what `src` sends to `dst`."""
        self._call(self._set(src, dst, False, None, reset))

    def heal(self, src: str, dst: str) -> None:
        self._call(self._set(src, dst, True, 0.0, False))

    def slow(self, src: str, dst: str, delay_s: float) -> None:
        self._call(self._set(src, dst, True, delay_s, False))

    def partition(self, side: list[str], other: list[str], reset: bool = False) -> None:
        """Cut every link between the two sides, both ways."""
        for a in side:
            for b in other:
                self.cut(a, b, reset)
                self.cut(b, a, reset)

    def heal_all(self) -> None:
        self._call(self._heal_all())

    async def _set(self, src: str, dst: str, open_: bool, delay_s: float | None, reset: bool) -> None:
        link = self._link(src, dst)
        if delay_s is not None:
            link.delay_s = delay_s
        if open_:
            link.open.set()
            return
        link.open.clear()
        if reset:
            for first, second in list(link.connections):
                first.transport.abort()
                second.transport.abort()

    async def _heal_all(self) -> None:
        for link in self._links.values():
            link.delay_s = 0.0
            link.open.set()

    def close(self) -> None:
        async def shut() -> None:
            for server in self._servers:
                server.close()
            for link in self._links.values():
                for first, second in link.connections:
                    first.transport.abort()
                    second.transport.abort()
        self._call(shut())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # --- forwarding ----------------------------------------------------------------------------

    async def _accept(self, dst: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer_port = writer.get_extra_info("peername")[1]
        own_port = writer.get_extra_info("sockname")[1]
        src = self.identify(peer_port, own_port)
        self.connections[(src, dst)] += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self._upstream[dst])
        except (OSError, KeyError):
            writer.transport.abort()
            return
        outbound, inbound = self._link(src, dst), self._link(dst, src)
        pair = (writer, up_writer)
        outbound.connections.add(pair)
        inbound.connections.add(pair)
        try:
            await asyncio.gather(self._pump(reader, up_writer, outbound), self._pump(up_reader, writer, inbound),
                                 return_exceptions=True)
        finally:
            outbound.connections.discard(pair)
            inbound.connections.discard(pair)
            writer.transport.abort()
            up_writer.transport.abort()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: _Link) -> None:
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                await link.open.wait()
                if link.delay_s:
                    await asyncio.sleep(link.delay_s)
                    await link.open.wait()
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    def identify(self, peer_port: int, proxy_port: int) -> str:
        """The node whose process holds the socket at 127.0.0.1:`peer_port` connected to `proxy_port`."""
        inode = _socket_inode(peer_port, proxy_port)
        if inode is None:
            return CLIENT
        target = f"socket:[{inode}]"
        for name, pid in list(self.pids.items()):
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return name
                except OSError:
                    continue
        return CLIENT


def _socket_inode(local_port: int, remote_port: int) -> int | None:
    """The inode of the loopback TCP socket local_port -> remote_port, from /proc/net/tcp."""
    local = f"0100007F:{local_port:04X}"
    remote = f"0100007F:{remote_port:04X}"
    try:
        with open("/proc/net/tcp") as table:
            next(table)
            for line in table:
                fields = line.split()
                if fields[1] == local and fields[2] == remote:
                    return int(fields[9])
    except OSError:
        return None
    return None

