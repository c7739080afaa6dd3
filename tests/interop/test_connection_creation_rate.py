"""KIP-612 on real sockets: with `connection_creation_rate=3` for the default address (set with
`gregor configs --entity-type ips`, as kafka-configs.sh sets it), of eight
connections opened at once from 127.0.0.1 three are served and the others closed unanswered
after their throttle; with `max.connection.creation.rate=2` every connection is served, the ones
over the rate late."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from gregor.protocol.headers import encode_request
from gregor.protocol.messages import ApiVersionsRequest
from tests.cli.conftest import in_process

pytestmark = pytest.mark.interop


def _answered(sockets: list[socket.socket]) -> list[bool]:
    for sock in sockets:
        sock.sendall(encode_request(1, "rate-test", ApiVersionsRequest(), 0))
    answers = []
    for sock in sockets:
        try:
            head = sock.recv(4, socket.MSG_WAITALL)
            answers.append(len(head) == 4 and len(sock.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)) > 0)
        except ConnectionError:
            answers.append(False)
        sock.close()
    return answers


def test_an_address_over_its_connection_rate_is_closed(broker_factory, capsys):
    broker = broker_factory({"quota.window.num": "2", "quota.window.size.seconds": "1"})
    configs = ("configs", "--bootstrap-server", broker.bootstrap)
    altered = in_process(capsys, *configs, "--alter", "--entity-type", "ips", "--entity-default",
                         "--add-config", "connection_creation_rate=3")
    assert altered.stdout == "Completed updating config for the default ip.\n", altered
    described = in_process(capsys, *configs, "--describe", "--ip-defaults")
    assert described.stdout == "Quota configs for the default ip are connection_creation_rate=3.0\n", described
    time.sleep(2.1)  # the describe's connection leaves the rate's 2-second window
    sockets = [socket.create_connection(("127.0.0.1", broker.port), timeout=30) for _ in range(8)]
    assert sorted(_answered(sockets)) == [False] * 5 + [True] * 3


def test_connections_over_the_broker_rate_are_served_late(broker_factory):
    broker = broker_factory({"max.connection.creation.rate": "2", "quota.window.num": "2",
                             "quota.window.size.seconds": "1"})
    sockets = [socket.create_connection(("127.0.0.1", broker.port), timeout=30) for _ in range(6)]
    assert _answered(sockets) == [True] * 6
