"""The fault proxy (tools/faults/proxy.py) on an echo server: it forwards, names the connecting
process, stalls what a cut link carries until the heal, cuts one direction only, resets on demand."""

from __future__ import annotations

import socket
import socketserver
import subprocess
import sys
import threading

import pytest

from tools.faults.proxy import CLIENT, Proxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def proxied():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = Proxy()
    port = proxy.reserve("echo")
    proxy.target("echo", server.server_address[1])
    yield proxy, port
    proxy.close()
    server.shutdown()
    server.server_close()


def _round_trip(sock: socket.socket, data: bytes, timeout: float = 5) -> bytes:
    sock.settimeout(timeout)
    sock.sendall(data)
    received = b""
    while len(received) < len(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_forwards_and_names_the_connecting_process(proxied):
    proxy, port = proxied
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert _round_trip(sock, b"x" * 200000) == b"x" * 200000
    child = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys\n"
        f"s = socket.create_connection(('127.0.0.1', {port}))\n"
        "sys.stdin.readline()\n"
        "s.sendall(b'hi'); print(s.recv(2).decode(), flush=True)\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proxy.pids["n1"] = child.pid
    out, _ = child.communicate("go\n", timeout=30)
    assert out.strip() == "hi"
    assert proxy.connections[(CLIENT, "echo")] == 1
    assert proxy.connections[("n1", "echo")] == 1


def test_a_cut_link_stalls_until_healed(proxied):
    proxy, port = proxied
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert _round_trip(sock, b"before") == b"before"
        proxy.cut(CLIENT, "echo")
        with pytest.raises(TimeoutError):
            _round_trip(sock, b"during", timeout=0.5)
        with socket.create_connection(("127.0.0.1", port)) as late:  # accepted, then silence
            with pytest.raises(TimeoutError):
                _round_trip(late, b"late", timeout=0.3)
            proxy.heal(CLIENT, "echo")
            late.settimeout(5)
            assert late.recv(4) == b"late"
        sock.settimeout(5)
        assert sock.recv(6) == b"during"


def test_one_way_cut_and_slow_link(proxied):
    proxy, port = proxied
    with socket.create_connection(("127.0.0.1", port)) as sock:
        proxy.cut("echo", CLIENT)  # the server hears the client, its answers wait
        with pytest.raises(TimeoutError):
            _round_trip(sock, b"ping", timeout=0.5)
        proxy.slow("echo", CLIENT, 0.05)  # opens it again, slowly
        sock.settimeout(5)
        assert sock.recv(4) == b"ping"
        assert _round_trip(sock, b"pong") == b"pong"


def test_reset_closes_the_links_connections(proxied):
    proxy, port = proxied
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert _round_trip(sock, b"a") == b"a"
        proxy.cut(CLIENT, "echo", reset=True)
        sock.settimeout(5)
        try:
            data = sock.recv(1)
        except ConnectionResetError:
            data = b""
        assert data == b""
