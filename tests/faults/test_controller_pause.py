"""A paused controller does not fence every broker when it runs again.

While the only controller is stopped (SIGSTOP) for twice the brokers' session timeout, their
heartbeats wait unread in its sockets; when it runs again every session looks expired. Fencing
them all in one pass left Metadata answers listing no broker, and librdkafka then drops every
broker handle (the fault harness's assign-mode reader read nothing more for the rest of a long
run). The controller fences one stale broker at a time, as Kafka's does, so the waiting
heartbeats renew the others first.
"""

from __future__ import annotations

import time

import pytest

from tools.faults.cluster import CONTROLLER_SESSION, Cluster

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(180)]


def test_a_controller_paused_past_the_broker_sessions_fences_at_most_one_broker(tmp_path):
    cluster = Cluster(str(tmp_path), brokers=3, controllers=1)
    try:
        cluster.start()
        controller = cluster.controllers[0]
        time.sleep(1)  # sessions under way
        controller.pause()
        time.sleep(2 * int(CONTROLLER_SESSION["broker.session.timeout.ms"]) / 1000)
        controller.resume()
        cluster.wait_for_brokers(3, timeout=30)
        time.sleep(1)  # a second fencing would come within the retry backoff
        with open(controller.log_path, encoding="utf-8", errors="replace") as log:
            fenced = [line for line in log if "missed its session" in line]
        assert len(fenced) <= 1, "".join(fenced)
    finally:
        cluster.stop()
