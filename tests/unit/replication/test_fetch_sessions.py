"""Incremental fetch sessions between a follower's fetcher links and a leader (KIP-227), over the wire."""

from __future__ import annotations

import uuid

from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse
from gregor.protocol.primitives import Writer
from gregor.replication.config import ReplicationConfig
from gregor.replication.delayed_fetch import DelayedFetches
from gregor.replication.effects import ProposeIsr, SendFetch
from gregor.replication.fetch_sessions import FULL_SERVE_INTERVAL_MS, FetchSessions, next_epoch
from gregor.replication.fetcher_links import FetcherLinks
from gregor.replication.follower_fetch import serve_follower_fetch
from gregor.replication.partition import Partition
from gregor.storage.log import Log, LogConfig

from tests.unit.storage.helpers import batch

TOPIC, TOPIC_ID, VERSION = "t", uuid.UUID(int=7), 13
PARTITIONS = 3


def wire(message, decode_as):
    writer = Writer()
    message.encode_into(writer, VERSION)
    return decode_as.decode(writer.getvalue(), VERSION)


class Pair:
    """Leader 1 and follower 2 of partitions 0..2 of one topic, the follower's links, the leader's sessions."""

    def __init__(self, root) -> None:
        config = ReplicationConfig()
        registration = PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=1, partition_epoch=1)
        self.now = 0
        self.leaders, self.followers = {}, {}
        self.links = FetcherLinks(2, 500, lambda partition: True)
        self.sessions: FetchSessions | None = FetchSessions()
        for index in range(PARTITIONS):
            for broker, hosted in ((1, self.leaders), (2, self.followers)):
                log = Log(str(root / str(broker) / f"{TOPIC}-{index}"), LogConfig(), 0)
                hosted[index] = partition = Partition(TOPIC, index, TOPIC_ID, log, broker, config)
                self.carry_out(partition, partition.apply_registration(registration, 0))

    def carry_out(self, partition: Partition, effects) -> None:
        for effect in effects:
            if isinstance(effect, SendFetch):
                self.links.add(partition, effect)

    def round(self) -> tuple[FetchRequest, FetchResponse]:
        """The follower's next fetch reaches the leader, and its answer comes back."""
        self.now += 10
        (outgoing,) = self.links.ready()
        return self.serve(outgoing)

    def serve(self, outgoing) -> tuple[FetchRequest, FetchResponse]:
        """A fetch of the follower's reaches leader 1, and its answer comes back."""
        request = wire(outgoing.request, FetchRequest)
        opened = self.sessions.open(request, 2, True) if self.sessions is not None else None
        if isinstance(opened, FetchResponse):
            answer = opened
        else:
            served = serve_follower_fetch(request, 2, True, lambda name, index: self.leaders.get(index),
                                          lambda topic_id: TOPIC if topic_id == TOPIC_ID else None, self.now, opened)
            answer = served.response()
        response = wire(answer, FetchResponse)
        for partition, effects in self.links.on_response(1, outgoing.request_id, response, self.now):
            self.carry_out(partition, effects)
        return request, response


def named(message) -> list[int]:
    topics = message.topics if isinstance(message, FetchRequest) else message.responses
    return sorted(p.partition if isinstance(message, FetchRequest) else p.partition_index
                  for topic in topics for p in topic.partitions)


def test_after_a_full_fetch_only_changed_partitions_travel(tmp_path):
    pair = Pair(tmp_path)
    request, response = pair.round()
    assert (request.session_id, request.session_epoch, named(request)) == (0, 0, [0, 1, 2])
    assert response.session_id != 0 and named(response) == [0, 1, 2]

    request, response = pair.round()  # nothing new: an empty incremental fetch and answer
    assert (request.session_id, request.session_epoch) == (response.session_id, 1)
    assert named(request) == [] and named(response) == []

    pair.leaders[1].append_as_leader(batch(2), pair.now, 1)
    request, response = pair.round()
    assert named(request) == [] and named(response) == [1]  # the records of partition 1
    assert pair.followers[1].log.log_end_offset == 2 and pair.followers[1].high_watermark == 0

    request, response = pair.round()  # the follower's new position moves the leader's high watermark
    assert request.session_epoch == 3 and named(request) == [1] and named(response) == [1]
    assert pair.leaders[1].high_watermark == 2 and pair.followers[1].high_watermark == 2
    assert [pair.followers[i].high_watermark for i in (0, 2)] == [0, 0]


def test_a_session_the_leader_lost_is_started_again_with_a_full_fetch(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.sessions = FetchSessions()  # the leader restarted
    request, response = pair.round()
    assert request.session_epoch == 1 and response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    request, response = pair.round()  # the partitions asked again at once, in a new session
    assert (request.session_id, request.session_epoch, named(request)) == (0, 0, [0, 1, 2])
    assert response.session_id != 0 and named(response) == [0, 1, 2]


def test_a_wrong_epoch_is_refused(tmp_path):
    pair = Pair(tmp_path)
    request, response = pair.round()
    request.session_id, request.session_epoch = response.session_id, 5
    assert pair.sessions.open(request, 2, True).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    request.session_epoch = 1
    assert pair.sessions.open(request, 3, True).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_partition_no_longer_fetched_is_forgotten(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.leaders[2].apply_registration(PartitionRegistration(  # broker 3 leads partition 2 in a new epoch
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=3, leader_epoch=2, partition_epoch=2), pair.now)
    _, response = pair.round()
    assert [(p.partition_index, p.error_code) for t in response.responses for p in t.partitions] == [
        (2, ErrorCode.FENCED_LEADER_EPOCH)]
    request, response = pair.round()  # the fenced follower waits for the metadata, and stops fetching
    assert [(t.topic_id, t.partitions) for t in request.forgotten_topics_data] == [(TOPIC_ID, [2])]
    assert named(request) == [] and named(response) == []


def test_a_leader_without_sessions_gets_full_fetches(tmp_path):
    pair = Pair(tmp_path)
    pair.sessions = None
    for _ in range(2):
        request, response = pair.round()
        assert (request.session_id, request.session_epoch, named(request)) == (0, 0, [0, 1, 2])
        assert response.session_id == 0 and named(response) == [0, 1, 2]


def test_past_the_session_slots_a_new_follower_is_served_without_a_session(tmp_path):
    sessions = FetchSessions(max_sessions=1)
    request = FetchRequest(replica_id=2, session_id=0, session_epoch=0, topics=[])
    assert sessions.open(request, 2, True).full and sessions.open(request, 2, True).full  # its own, replaced
    assert sessions.open(request, 3, True) is None and len(sessions) == 1


def test_idle_partitions_of_a_session_still_count_the_follower_as_fetching(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    request, response = pair.round()  # an empty incremental fetch still serves every partition
    assert named(request) == [] and named(response) == []
    assert {pair.leaders[i].remote[2].last_caught_up_ms for i in range(PARTITIONS)} == {pair.now}


def test_the_session_epoch_wraps_past_int32_to_one_on_both_sides(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.links._links[1].session.next_epoch = pair.sessions._by_replica[2].next_epoch = 2**31 - 1
    request, response = pair.round()
    assert (request.session_epoch, response.error_code) == (2**31 - 1, ErrorCode.NONE)
    request, response = pair.round()  # it would not encode as an int32 without the wrap
    assert (request.session_epoch, response.error_code) == (1, ErrorCode.NONE)
    assert next_epoch(0) == 1 and next_epoch(41) == 42


def test_a_partition_the_leader_answers_but_the_follower_does_not_fetch_is_forgotten(tmp_path):
    """A topic deleted and created again under its name between two fetches can leave the old
    id's partition in the leader's session; its error must not be answered on every fetch."""
    pair = Pair(tmp_path)
    pair.round()
    old_id = uuid.uuid4()
    session = pair.sessions._by_replica[2]
    session.add((old_id, 0), FetchRequest.FetchPartition(partition=0))
    _, response = pair.round()
    assert [(t.topic_id, p.error_code) for t in response.responses for p in t.partitions] == [
        (old_id, ErrorCode.UNKNOWN_TOPIC_ID)]
    request, response = pair.round()
    assert [(t.topic_id, t.partitions) for t in request.forgotten_topics_data] == [(old_id, [0])]
    assert (old_id, 0) not in pair.sessions._by_replica[2].partitions and named(response) == []


def test_an_idle_partition_takes_the_short_path_only_while_its_fetch_can_change_nothing(tmp_path):
    """Every fetch of a session serves its idle partitions without building an answer
    (`fetch_at_log_end`): while nothing can move, by a few comparisons and with no effect; a
    fetch that may move the high watermark or the ISR, or must be refused, takes the full path."""
    pair = Pair(tmp_path)
    pair.round()
    pair.round()
    leader = pair.leaders[0]
    at_end = FetchRequest.FetchPartition(partition=0, current_leader_epoch=1, fetch_offset=0, last_fetched_epoch=-1)
    assert leader.fetch_at_log_end(2, at_end, pair.now + 1) == (None, (0, 0, 0))  # nothing to carry out
    assert leader.remote[2].last_caught_up_ms == pair.now + 1
    stale = FetchRequest.FetchPartition(partition=0, current_leader_epoch=0, fetch_offset=0, last_fetched_epoch=-1)
    assert leader.fetch_at_log_end(2, stale, pair.now) is None  # fenced: answered with the error
    leader.append_as_leader(batch(2), pair.now, 1)  # the follower is behind the log end now
    assert leader.fetch_at_log_end(2, at_end, pair.now) is None
    pair.round()
    pair.round()
    assert leader.high_watermark == 2
    leader.apply_registration(PartitionRegistration(replicas=(1, 2), isr=(1,), leader=1, leader_epoch=1,
                                                    partition_epoch=2), pair.now)
    caught_up = FetchRequest.FetchPartition(partition=0, current_leader_epoch=1, fetch_offset=2, last_fetched_epoch=-1)
    effects, _ = leader.fetch_at_log_end(2, caught_up, pair.now)  # out of the ISR: it may join it
    (proposal,) = effects
    assert isinstance(proposal, ProposeIsr) and 2 in proposal.isr


def _settle(pair: Pair) -> None:
    """Rounds until every partition of the session rests (the full serve of the first fetch passed)."""
    for _ in range(3):
        pair.round()
    assert all(cached.resting for cached in pair.sessions._by_replica[2].partitions.values())


def _spy(partitions: dict[int, Partition], *methods: str) -> list[int]:
    """The indexes of the partitions whose `methods` are called from here, in the order called."""
    calls: list[int] = []
    for index, partition in partitions.items():
        for method in methods:
            def spy(*args, _real=getattr(partition, method), _index=index):
                calls.append(_index)
                return _real(*args)
            setattr(partition, method, spy)
    return calls


def _count_serves(pair: Pair) -> list[int]:
    """The partitions each incremental fetch serves from here (each goes through `fetch_at_log_end` first)."""
    return _spy(pair.leaders, "fetch_at_log_end")


def test_a_settled_partition_rests_until_it_changes(tmp_path):
    """A partition a fetch found settled is left out of the next fetches until it changes: an
    append, a new leader epoch. The change gives the follower the session's last fetch time."""
    pair = Pair(tmp_path)
    _settle(pair)
    served = _count_serves(pair)
    request, response = pair.round()
    assert served == [] and named(request) == [] and named(response) == []
    assert pair.leaders[0].remote[2].last_fetch_ms < pair.now, "nothing looks at a resting partition"
    pair.leaders[0].append_as_leader(batch(1), pair.now + 5, 1)
    assert pair.leaders[0].remote[2].last_fetch_ms == pair.now == pair.leaders[0].remote[2].last_caught_up_ms
    served.clear()
    pair.round()
    assert served == [0]
    pair.round()
    _settle(pair)
    served.clear()
    pair.leaders[1].append_as_leader(batch(2), pair.now, 1)
    _, response = pair.round()
    assert served == [1] and named(response) == [1] and pair.followers[1].log.log_end_offset == 2
    pair.round()  # the follower's next position moves the high watermark: answered, not resting yet
    served.clear()
    pair.round()
    pair.round()
    assert served == [1] and pair.leaders[1].high_watermark == 2  # settled again, then resting
    served.clear()
    pair.round()
    assert served == []
    pair.leaders[2].apply_registration(PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=2,
                                                             partition_epoch=2), pair.now)
    _, response = pair.round()
    assert served == [2] and [p.error_code for t in response.responses for p in t.partitions] == [
        ErrorCode.FENCED_LEADER_EPOCH]


def test_a_long_rest_does_not_put_the_follower_out_of_sync(tmp_path):
    """The fetches that leave a resting partition out keep its follower caught up: the first
    append after a rest longer than replica.lag.time.max.ms shrinks no ISR."""
    pair = Pair(tmp_path)
    _settle(pair)
    session = pair.sessions._by_replica[2]
    session.next_full_serve_ms = 10**12  # only resting fetches from here
    pair.now += ReplicationConfig().replica_lag_time_max_ms + 5_000
    pair.round()
    leader = pair.leaders[0]
    leader.append_as_leader(batch(1), pair.now, 1)
    deadline = leader.next_deadline(pair.now)
    assert deadline is not None and deadline > pair.now
    assert leader.tick(pair.now) == [] and leader.isr == [1, 2]


def test_every_partition_is_served_in_full_within_the_full_serve_interval(tmp_path):
    """A change the count does not see (the log start moved by the log itself, as retention
    does) reaches the follower with the next full serve."""
    pair = Pair(tmp_path)
    pair.leaders[0].append_as_leader(batch(2), pair.now, 1)
    _settle(pair)
    _settle(pair)
    pair.leaders[0].log.delete_records_before(1)
    _, response = pair.round()
    assert named(response) == []
    for _ in range(FULL_SERVE_INTERVAL_MS // 10):
        _, response = pair.round()
        if named(response):
            break
    assert named(response) == [0] and response.responses[0].partitions[0].log_start_offset == 1


def _count_follower_answers(pair: Pair) -> list[int]:
    """The follower partitions each answer reaches from here (riding ones are not looked at)."""
    return _spy(pair.followers, "still_fetching", "on_fetch_response")


def test_an_answer_costs_the_follower_the_partitions_it_names_not_those_riding(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.round()  # nothing new: the three fetches ride with the link from here
    link = pair.links._links[1]
    assert sorted(link.riding) == [(TOPIC, i) for i in range(PARTITIONS)]
    assert all(pair.followers[i].fetcher.next_deadline() is None for i in range(PARTITIONS))  # the link's to time out
    reached = _count_follower_answers(pair)
    for _ in range(3):
        request, response = pair.round()
        assert named(request) == [] and named(response) == []
    assert reached == []
    pair.leaders[1].append_as_leader(batch(2), pair.now, 1)
    request, response = pair.round()
    assert named(response) == [1] and reached == [1] and pair.followers[1].log.log_end_offset == 2
    request, response = pair.round()  # its next position moves the leader's high watermark
    assert named(request) == [1] and pair.leaders[1].high_watermark == 2
    assert sorted(link.riding) == [(TOPIC, 0), (TOPIC, 2)]


def test_a_riding_partition_that_stops_following_is_forgotten(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.round()
    follower = pair.followers[2]
    pair.carry_out(follower, follower.apply_registration(PartitionRegistration(  # broker 2 leads it now
        replicas=(1, 2), isr=(1, 2), leader=2, leader_epoch=2, partition_epoch=2), pair.now))
    assert follower.fetcher is None and (TOPIC, 2) in pair.links._links[1].riding
    pair.links.check_following(follower)  # as the host does after every event on a partition
    request, _ = pair.round()
    assert [(t.topic_id, t.partitions) for t in request.forgotten_topics_data] == [(TOPIC_ID, [2])]
    assert sorted(pair.links._links[1].riding) == [(TOPIC, 0), (TOPIC, 1)]
    assert (TOPIC, 2) not in pair.sessions._by_replica[2].partitions


def test_a_riding_partition_that_follows_another_leader_leaves_the_old_link(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.round()
    follower = pair.followers[1]
    effects = follower.apply_registration(PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=3, leader_epoch=2, partition_epoch=2), pair.now)
    pair.carry_out(follower, effects)
    links = pair.links._links
    assert (TOPIC, 1) not in links[1].riding and list(links[3].fetches) == [(TOPIC, 1)]
    outgoing = {o.leader_id: o.request for o in pair.links.ready()}
    assert named(outgoing[3]) == [1] and outgoing[3].session_epoch == 0  # a new session with leader 3
    assert named(outgoing[1]) == [] and [(t.topic_id, t.partitions) for t in outgoing[1].forgotten_topics_data] == [
        (TOPIC_ID, [1])]


def test_a_lost_request_fails_the_fetches_riding_with_it(tmp_path):
    pair = Pair(tmp_path)
    pair.round()
    pair.round()
    (outgoing,) = pair.links.ready()
    results = pair.links.on_failure(1, outgoing.request_id, pair.now)
    assert sorted(partition.index for partition, _ in results) == [0, 1, 2] and not pair.links._links[1].riding
    assert all(pair.followers[i].fetcher.next_deadline() == pair.now + ReplicationConfig().replica_fetch_backoff_ms
               for i in range(PARTITIONS))
    assert not pair.links.has_ready()


def test_an_answer_for_a_partition_that_left_the_link_meanwhile_is_dropped_not_forgotten(tmp_path):
    """It left while the request was out (another leader); back with this leader, its next fetch
    names it, and nothing forgets it (the answer once made it a stray: named and forgotten at once,
    the leader dropped it from the session and the follower never fetched it again)."""
    pair = Pair(tmp_path)
    pair.round()
    pair.round()
    (outgoing,) = pair.links.ready()  # the long poll of the three riding fetches
    pair.leaders[1].append_as_leader(batch(2), pair.now, 1)
    follower = pair.followers[1]
    for leader, epoch in ((3, 2), (1, 3)):
        registration = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=leader, leader_epoch=epoch,
                                             partition_epoch=epoch)
        if leader == 3:
            pair.carry_out(follower, follower.apply_registration(registration, pair.now))
            _, response = pair.serve(outgoing)  # leader 1 still answers with the records
            assert named(response) == [1] and follower.log.log_end_offset == 0
        else:
            pair.leaders[1].apply_registration(registration, pair.now)
            pair.carry_out(follower, follower.apply_registration(registration, pair.now))
    outgoing = {o.leader_id: o for o in pair.links.ready()}
    request, response = pair.serve(outgoing[1])
    assert named(request) == [1] and request.forgotten_topics_data == []
    assert named(response) == [1] and follower.log.log_end_offset == 2


def _serve_parked(pair: Pair, parked: DelayedFetches) -> None:
    """The follower's next fetch reaches the leader, finds nothing new and parks, as the broker's
    handler parks it (under `served.keys`)."""
    pair.now += 10
    (outgoing,) = pair.links.ready()
    request = wire(outgoing.request, FetchRequest)
    session = pair.sessions.open(request, 2, True)
    served = serve_follower_fetch(request, 2, True, lambda name, index: pair.leaders.get(index),
                                  lambda topic_id: TOPIC if topic_id == TOPIC_ID else None, pair.now, session)
    assert served.must_wait(request)
    parked.park(served.keys, pair.now + 500, "parked fetch")


def test_a_fetch_parked_while_partitions_rest_is_woken_by_an_append_or_a_leader_change(tmp_path):
    """A fetch parked while partitions rest waits under its session's key, not under each resting
    partition's: an append to one of them or a new leader epoch reaches it through
    `take_woken_sessions`, as the broker's `on_leader_append` and `_wake_fetches` pass it on."""
    pair = Pair(tmp_path / "append")
    _settle(pair)
    parked: DelayedFetches[str] = DelayedFetches()
    _serve_parked(pair, parked)
    session = pair.sessions._by_replica[2]
    assert parked.check(pair.leaders[1].key) == [], "not parked under each resting partition"
    assert pair.leaders[1].take_woken_sessions() == []
    pair.leaders[1].append_as_leader(batch(1), pair.now, 1)
    assert pair.leaders[1].take_woken_sessions() == [session.wake_key]
    assert parked.check(session.wake_key) == ["parked fetch"]
    assert pair.leaders[1].take_woken_sessions() == [], "taken once"
    pair = Pair(tmp_path / "leader")
    _settle(pair)
    _serve_parked(pair, parked)
    pair.leaders[2].apply_registration(PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=2,
                                                             partition_epoch=2), pair.now)
    (woken,) = pair.leaders[2].take_woken_sessions()
    assert parked.complete(woken) == ["parked fetch"]


def test_a_resting_partition_of_a_session_the_follower_replaced_leaves_the_follower_alone(tmp_path):
    """The change of a partition that rested in a session the follower has since replaced (it
    started a new one) neither moves the follower's fetch times nor wakes anything."""
    pair = Pair(tmp_path)
    _settle(pair)
    old = pair.sessions._by_replica[2]
    pair.sessions.open(FetchRequest(replica_id=2, session_id=old.session_id, session_epoch=0), 2, True)
    assert pair.sessions._by_replica[2] is not old and old.closed
    follower = pair.leaders[0].remote[2]
    times = (follower.last_fetch_ms, follower.last_caught_up_ms)
    old.last_fetch_ms = pair.now + 1_000
    pair.leaders[0].append_as_leader(batch(1), pair.now, 1)
    assert (follower.last_fetch_ms, follower.last_caught_up_ms) == times
    assert pair.leaders[0].take_woken_sessions() == []
