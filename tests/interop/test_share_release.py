"""A share group member's records come back before their acquisition locks run out when the
member goes (confluent-kafka's ShareConsumer, the real peer).

The locks here last a minute and every wait is shorter, so a record that came back did so
because the member went, not because its lock expired: its process killed with -9 (the broker
sees its connection close: the records come back before even its session could time out), its
process stopped (its connections stay open: fenced once its session times out), or a clean
close.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import AcknowledgeType

from tests.broker_process import BrokerProcess
from tests.interop.test_share_groups import create_topic, poll_until, produce, share_consumer
from tests.share_close import close_share_consumer

pytestmark = [pytest.mark.interop, pytest.mark.slow]

LOCK_MS = 60000
SESSION_MS = 12000
WAIT_S = 25  # every wait for a record stays well below LOCK_MS
BEFORE_SESSION_TIMEOUT_S = 8  # well below SESSION_MS, with room for a loaded machine
SETTINGS = {"share.auto.offset.reset": "earliest", "group.share.record.lock.duration.ms": str(LOCK_MS),
            "group.share.heartbeat.interval.ms": "300", "group.share.session.timeout.ms": str(SESSION_MS),
            "share.coordinator.state.topic.num.partitions": "1", "offsets.topic.num.partitions": "1"}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor-share-release") / "data"), SETTINGS)
    process.start()
    yield process
    process.stop()


def holding_member(bootstrap: str, topic: str, group: str) -> tuple[subprocess.Popen, list[int]]:
    """A ShareConsumer process that holds the records it receives; it and the offsets it holds,
    once it holds some."""
    member = subprocess.Popen([sys.executable, "-m", "tests.interop.share_member", "--bootstrap", bootstrap,
                               "--topic", topic, "--group", group], stdout=subprocess.PIPE, text=True, cwd=REPO)
    held: list[int] = []
    assert member.stdout is not None
    stdout = member.stdout
    threading.Thread(target=lambda: held.extend(json.loads(line)["record"][1] for line in stdout),
                     daemon=True).start()
    deadline = time.monotonic() + WAIT_S
    while not held:
        if time.monotonic() > deadline:
            member.kill()
            member.wait()
            raise AssertionError("the member received nothing")
        time.sleep(0.05)
    time.sleep(0.3)  # the rest of its first fetch
    return member, held


def redelivered(bootstrap: str, topic: str, group: str, count: int, within_s: float = WAIT_S) -> dict[int, int]:
    """Offset -> delivery count of every record of `topic` as a new member receives them
    (accepted), all of them within `within_s`."""
    survivor = share_consumer(bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        received = poll_until(survivor, lambda got: {m.offset() for m in got} >= set(range(count)), within_s,
                              lambda m: survivor.acknowledge(m, AcknowledgeType.ACCEPT))
        survivor.commit_sync()
    finally:
        close_share_consumer(survivor)
    return {m.offset(): m.delivery_count() for m in received}


def check_returned(counts: dict[int, int], held: list[int], count: int) -> None:
    assert held and all(counts[offset] == 2 for offset in held), (held, counts)
    assert all(counts[offset] == 1 for offset in set(range(count)) - set(held)), counts


def test_a_killed_members_records_return_when_its_connection_drops(broker):
    create_topic(broker.bootstrap, "dropped", 1)
    produce(broker.bootstrap, "dropped", 8, 1)
    member, held = holding_member(broker.bootstrap, "dropped", "dropped-group")
    member.kill()
    member.wait()
    counts = redelivered(broker.bootstrap, "dropped", "dropped-group", 8, BEFORE_SESSION_TIMEOUT_S)
    check_returned(counts, held, 8)


def test_a_stopped_members_records_return_when_its_session_times_out(broker):
    create_topic(broker.bootstrap, "stalled", 1)
    produce(broker.bootstrap, "stalled", 8, 1)
    member, held = holding_member(broker.bootstrap, "stalled", "stalled-group")
    try:
        member.send_signal(signal.SIGSTOP)  # its connections stay open: only the session timeout fences it
        counts = redelivered(broker.bootstrap, "stalled", "stalled-group", 8)
    finally:
        member.kill()
        member.wait()
    check_returned(counts, held, 8)


def test_a_cleanly_closed_members_records_return_at_once(broker):
    create_topic(broker.bootstrap, "closed", 1)
    produce(broker.bootstrap, "closed", 8, 1)
    leaving = share_consumer(broker.bootstrap, "closed-group", "closed", **{"share.acknowledgement.mode": "explicit"})
    try:
        held = [m.offset() for m in poll_until(leaving, lambda got: len(got) > 0, WAIT_S)]
    finally:
        close_share_consumer(leaving)
    counts = redelivered(broker.bootstrap, "closed", "closed-group", 8, BEFORE_SESSION_TIMEOUT_S)
    check_returned(counts, held, 8)


def test_a_closing_members_last_acknowledgements_are_kept(broker):
    """librdkafka sends its last acknowledgements (ShareAcknowledge, epoch -1) and its leave
    (ShareGroupHeartbeat, epoch -1) at once on two connections: whichever the broker handles
    first, the accepted records stay accepted and only the unacknowledged one comes back."""
    create_topic(broker.bootstrap, "acked", 1)
    produce(broker.bootstrap, "acked", 8, 1)
    leaving = share_consumer(broker.bootstrap, "acked-group", "acked", **{"share.acknowledgement.mode": "explicit"})
    try:
        held = poll_until(leaving, lambda got: len(got) > 0, WAIT_S)
        assert len(held) > 1, "the records were produced in one flush: one batch, one poll"
        for message in held[:-1]:
            leaving.acknowledge(message, AcknowledgeType.ACCEPT)
    finally:
        close_share_consumer(leaving)
    accepted = {m.offset() for m in held[:-1]}
    survivor = share_consumer(broker.bootstrap, "acked-group", "acked", **{"share.acknowledgement.mode": "explicit"})
    try:
        received = poll_until(survivor, lambda got: {m.offset() for m in got} >= set(range(8)) - accepted,
                              BEFORE_SESSION_TIMEOUT_S, lambda m: survivor.acknowledge(m, AcknowledgeType.ACCEPT))
    finally:
        close_share_consumer(survivor)
    counts = {m.offset(): m.delivery_count() for m in received}
    assert not accepted & set(counts), (sorted(accepted), counts)
    assert counts[held[-1].offset()] == 2, counts
