"""Broker sessions on the active controller, in virtual time: catch-up unfencing, expiry,
fencing on request, controlled shutdown and the errors of a heartbeat."""

from __future__ import annotations

from gregor.controller.broker_heartbeats import BrokerHeartbeats
from gregor.protocol.error_codes import ErrorCode

from tests.unit.controller.images import CLEAN, cluster, partition, replay


def beat(heartbeats, image, broker, now, epoch=5, offset=100, **flags):
    reply = heartbeats.heartbeat(image, broker, epoch, offset, flags.get("want_fence", False),
                                 flags.get("want_shut_down", False), CLEAN, now)
    return reply, replay(image, reply.records)


def test_a_fenced_broker_is_unfenced_once_it_replayed_its_registration():
    heartbeats = BrokerHeartbeats(1000)
    image = cluster(live=(1, 2, 3))
    reply, image = beat(heartbeats, image, 4, 0, offset=4)
    assert (reply.is_caught_up, reply.is_fenced, image.brokers[4].fenced) == (False, True, True)
    reply, image = beat(heartbeats, image, 4, 10, offset=5)
    assert (reply.is_caught_up, reply.is_fenced, image.brokers[4].fenced) == (True, False, False)


def test_sessions_expire_in_virtual_time_and_start_when_first_seen():
    heartbeats = BrokerHeartbeats(1000)
    image = cluster()
    assert heartbeats.stale_broker(image, 0) is None  # a new controller gives everyone a full session
    beat(heartbeats, image, 1, 900)
    assert heartbeats.stale_broker(image, 1500) == 2
    assert heartbeats.session_active(1, 1500) and not heartbeats.session_active(2, 1500)


def test_a_controller_elected_again_gives_every_broker_a_fresh_session():
    """Contacts kept from an earlier term are stale: the brokers heartbeat to another controller
    meanwhile. Counting them fenced every broker the moment the controller led again."""
    heartbeats = BrokerHeartbeats(1000)
    image = cluster()
    heartbeats.take_over(3)
    heartbeats.stale_broker(image, 0)
    for broker in (1, 2, 3, 4):
        beat(heartbeats, image, broker, 500)
    heartbeats.take_over(3)  # the same term: sessions go on
    assert heartbeats.stale_broker(image, 1600) == 1
    heartbeats.take_over(5)  # led by others in epoch 4, this controller leads again
    assert heartbeats.stale_broker(image, 10_000) is None
    assert heartbeats.next_expiry(image) == 11_001
    assert not heartbeats.heard_within_session(1, 10_000)


def test_the_next_expiry_is_the_first_moment_a_broker_is_stale():
    """The active controller sleeps until `next_expiry` (no period): not a millisecond late."""
    heartbeats = BrokerHeartbeats(1000)
    image = cluster()
    assert heartbeats.next_expiry(image) == 0  # brokers not heard from yet: start their sessions at once
    heartbeats.stale_broker(image, 0)
    beat(heartbeats, image, 1, 900)
    assert heartbeats.next_expiry(image) == 1001
    assert heartbeats.stale_broker(image, 1000) is None
    assert heartbeats.stale_broker(image, 1001) == 2
    fenced = replay(image, [record for broker in (2, 3, 4) for record in
                            heartbeats.heartbeat(image, broker, 5, 100, True, False, CLEAN, 1001).records])
    assert heartbeats.next_expiry(fenced) == 900 + 1001  # 2-4 are fenced now: only broker 1 counts
    assert heartbeats.next_expiry(replay(fenced, heartbeats.heartbeat(fenced, 1, 5, 100, True, False, CLEAN,
                                                                      1100).records)) is None


def test_only_a_session_this_controller_heard_makes_a_second_registration_a_duplicate():
    heartbeats = BrokerHeartbeats(1000)
    image = cluster()
    heartbeats.stale_broker(image, 0)  # taking over: every registered broker gets a session
    assert heartbeats.session_active(1, 10) and not heartbeats.heard_within_session(1, 10)
    beat(heartbeats, image, 1, 20)
    assert heartbeats.heard_within_session(1, 30) and not heartbeats.heard_within_session(1, 1021)
    heartbeats.registered(2, 40)
    assert heartbeats.heard_within_session(2, 50)


def test_stale_brokers_are_named_one_at_a_time_the_longest_silent_first():
    """After a pause of the controller itself every session looks expired while the heartbeats
    wait unread: naming one broker at a time (Kafka's maybeFenceOneStaleBroker) lets those
    heartbeats renew the others before they are fenced too."""
    heartbeats = BrokerHeartbeats(1000)
    image = cluster()
    heartbeats.stale_broker(image, 0)
    for broker, at in ((1, 300), (2, 100), (3, 200), (4, 400)):
        beat(heartbeats, image, broker, at)
    assert heartbeats.stale_broker(image, 5000) == 2  # silent since 100: the longest
    fenced = replay(image, heartbeats.heartbeat(image, 2, 5, 100, True, False, CLEAN, 100).records)
    for broker in (1, 3, 4):  # their heartbeats, read once the controller runs again
        beat(heartbeats, fenced, broker, 5001)
    assert heartbeats.stale_broker(fenced, 5002) is None


def test_a_pause_of_the_controller_is_not_counted_against_the_brokers():
    """The duties' timer fires late by about the pause (it is due at least twice per session):
    the sessions are lengthened by it, so the brokers' heartbeats, still unread, renew them."""
    heartbeats = BrokerHeartbeats(1000)
    image = cluster()
    heartbeats.stale_broker(image, 0)
    for broker in (1, 2, 3, 4):
        beat(heartbeats, image, broker, 400)
    assert heartbeats.next_check(image, 400) == 900  # half a session on, before the expiry at 1401
    # stopped from 450 to 3000: the timer due at 900 fires at 3000, 2100 ms late
    heartbeats.controller_paused(2100, 3000)
    assert heartbeats.stale_broker(image, 3000) is None
    assert heartbeats.stale_broker(image, 3501) == 1  # brokers that stay silent are fenced in time
    heartbeats.controller_paused(10_000, 3600)
    assert heartbeats.session_active(1, 4600) and not heartbeats.session_active(1, 4601)  # never past now


def test_unknown_brokers_and_stale_epochs_are_refused():
    heartbeats = BrokerHeartbeats()
    image = cluster()
    assert beat(heartbeats, image, 9, 0)[0].error == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert beat(heartbeats, image, 1, 0, epoch=4)[0].error == ErrorCode.STALE_BROKER_EPOCH


def test_want_fence_fences_and_controlled_shutdown_waits_until_the_broker_leads_nothing():
    heartbeats = BrokerHeartbeats()
    reply, image = beat(heartbeats, cluster(), 3, 0, want_fence=True)
    assert reply.is_fenced and image.brokers[3].fenced and partition(image).isr == (1, 2)
    reply, image = beat(heartbeats, image, 1, 0, want_shut_down=True)
    assert (reply.should_shut_down, image.brokers[1].in_controlled_shutdown) == (False, True)
    assert (partition(image).leader, partition(image).isr) == (2, (2,))
    reply, image = beat(heartbeats, image, 1, 10, want_shut_down=True)
    assert (reply.should_shut_down, reply.is_fenced, image.brokers[1].fenced) == (True, True, True)
