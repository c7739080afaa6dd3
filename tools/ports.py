"""Loopback ports for the servers that the tests and the fault harness start.

A port the OS hands out for `bind(port 0)` comes from the ephemeral range, the same range every
outgoing connection on the machine draws its local port from: between closing the probe socket
and the server binding the port, a client connection (or another test's probe) may take it, and
the server then fails to start while its address answers as someone else. So ports come from
below the ephemeral range instead, each pytest-xdist worker from its own slice, never twice from
one process, and only when a bind with SO_REUSEADDR (as the servers bind) succeeds.
"""

from __future__ import annotations

import os
import random
import socket

_FLOOR = 10000
_SLICES = 16
_given: set[int] = set()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as limits:
            return int(limits.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _slice() -> range:
    """This process's share of the ports under the ephemeral range (one per xdist worker)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else os.getpid()
    width = (_ephemeral_low() - _FLOOR) // _SLICES
    start = _FLOOR + (index % _SLICES) * width
    return range(start, start + width)


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nobody listens on, outside the ephemeral range where one exists."""
    ports = _slice()
    if len(ports) < 64:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    offset = random.randrange(len(ports))
    for step in range(len(ports)):
        port = ports[(offset + step) % len(ports)]
        if port not in _given and _bindable(port):
            _given.add(port)
            return port
    raise OSError("no free loopback port left in this process's range")
