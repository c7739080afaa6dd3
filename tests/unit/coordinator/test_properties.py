"""Random members doing random things over virtual time never wedge a group.

Clients mostly behave (join, sync, heartbeat as a consumer would) and sometimes do anything
(join, sync, heartbeat, commit or leave out of turn, or fall silent); some keep heartbeating but
never sync or never rejoin, so only the coordinator's timeouts can move the group on. Time
jumps, appends fail.
Checked
after every step: no request is answered twice; a member that never syncs is gone within the
rebalance timeout of its generation; and with dynamic members a rebalance never stays in
PreparingRebalance longer than max(initial delay, rebalance timeout) nor in CompletingRebalance
longer than the rebalance timeout, and every member of a generation was told about it. At the
end, once some members left and the others vanished, and time ran out, every request got exactly
one answer and the group is Empty (or gone).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gregor.coordinator import GroupState
from gregor.coordinator.rebalance import NEW_MEMBER_JOIN_TIMEOUT_MS
from gregor.coordinator.results import JoinResult, SyncResult
from gregor.protocol.error_codes import ErrorCode

from .harness import Harness

CLIENTS = 4
SESSION_MS = 6000
REBALANCE_TIMEOUTS = (6000, 10000, 20000)
INITIAL_DELAY_MS = 3000
FORGET = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID)


@dataclass
class Client:
    instance: str | None
    rebalance_ms: int
    habit: str = "good"          # or "never-syncs", "never-rejoins"
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    members: tuple[str, ...] = ()
    waiting: str | None = None   # the token of its parked request
    synced: bool = False
    must_rejoin: bool = True


class Driver:
    def __init__(self, static: bool, profiles: list[tuple[int, str]]) -> None:
        self.h = Harness(auto_append=False, seed=3)
        self.clients = [Client(f"i-{i}" if static and i % 2 == 0 else None, rebalance_ms, habit)
                        for i, (rebalance_ms, habit) in enumerate(profiles)]
        self.owner: dict[object, int] = {}
        self.seen = 0
        self.told: set[tuple[str, int]] = set()         # (member id, generation) of JoinGroup answers
        self.generation_seen_at: dict[int, int] = {}

    def _observe(self) -> None:
        events = self.h.events
        for token, result in events[self.seen:]:
            client = self.clients[self.owner[token]] if token in self.owner else None
            if client is None:
                continue
            if client.waiting == token:
                client.waiting = None
            if isinstance(result, JoinResult):
                if result.error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED):
                    client.member_id = result.member_id
                if result.error is ErrorCode.NONE:
                    self.told.add((result.member_id, result.generation_id))
                    client.generation = result.generation_id
                    client.leader = result.leader == result.member_id
                    client.members = tuple(member.member_id for member in result.members)
                    client.synced, client.must_rejoin = False, False
            elif isinstance(result, SyncResult):
                client.synced = result.error is ErrorCode.NONE
                client.must_rejoin = result.error is not ErrorCode.NONE
            if isinstance(result, (JoinResult, SyncResult)) and result.error in FORGET:
                self._reset(client)
        self.seen = len(events)

    @staticmethod
    def _reset(client: Client) -> None:
        client.member_id, client.generation, client.must_rejoin = "", -1, True

    def _track(self, token: str, index: int) -> None:
        self.owner[token] = index
        self.clients[index].waiting = token

    def step(self, op: str, index: int, value: int) -> None:
        self._step(op, index, value)
        self._observe()

    def _step(self, op: str, index: int, value: int) -> None:
        h, client = self.h, self.clients[index]
        if op == "act":
            # What a consumer does next: nothing while a request is parked, else (re)join, sync
            # once joined, heartbeat once synced.
            if client.waiting is not None:
                return
            stubborn = client.member_id and client.generation >= 0 and (
                (client.habit == "never-syncs" and not client.synced)
                or (client.habit == "never-rejoins" and client.synced))
            if client.must_rejoin and not stubborn or not client.member_id:
                op, value = "join", 1
            elif not client.synced and not stubborn:
                op = "sync"
            else:
                error = h.heartbeat(client.member_id, client.generation, instance=client.instance)
                if error in FORGET:
                    self._reset(client)
                client.must_rejoin = error is not ErrorCode.NONE
                return
        if op == "join":
            self._track(h.join(member_id=client.member_id, instance=client.instance, client_id=f"c{index}",
                               session=SESSION_MS, rebalance=client.rebalance_ms, require_known=value % 3 != 0,
                               protocols=[("range", bytes([value % 5 == 0]))], skip=value % 2 == 1), index)
        elif op == "sync":
            assignments = {member: b"a" for member in client.members} if client.leader else None
            self._track(h.sync(client.member_id, client.generation, instance=client.instance,
                               assignments=assignments), index)
        elif op == "heartbeat":
            if h.heartbeat(client.member_id, client.generation, instance=client.instance) in FORGET:
                self._reset(client)
        elif op == "commit":
            self._track(h.commit({("t", index): (value, -1, "")}, generation=client.generation,
                                 member_id=client.member_id, instance=client.instance), index)
        elif op == "leave":
            h.leave((client.member_id, client.instance, None))
            self._reset(client)
        else:
            h.complete_appends(ErrorCode.NOT_LEADER_OR_FOLLOWER if op == "fail" else ErrorCode.NONE)
            if op in ("advance", "sleep"):
                h.advance(value % 2500 if op == "advance" else value)

    def check(self, bounded: bool) -> None:
        for token, results in self.h.responses.items():
            assert len(results) == 1, (token, results)
        group = self.h.coordinator.group("g")
        if group is None:
            return
        now = self.h.now
        since = now - self.generation_seen_at.setdefault(group.generation_id, now)
        syncing = group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        for client in self.clients:
            if (syncing and client.habit == "never-syncs" and client.member_id in group.members
                    and client.generation == group.generation_id and not client.synced):
                assert since <= max(REBALANCE_TIMEOUTS), since
        if not bounded:
            return
        elapsed = now - group.state_timestamp_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            assert elapsed <= max(INITIAL_DELAY_MS, max(REBALANCE_TIMEOUTS)), elapsed
        elif group.state is GroupState.COMPLETING_REBALANCE:
            assert elapsed <= max(REBALANCE_TIMEOUTS), elapsed
        if syncing:
            assert {(member_id, group.generation_id) for member_id in group.members} <= self.told

    def finish(self) -> None:
        h = self.h
        h.auto_append = True
        h.complete_appends()
        for client in self.clients[1:3]:  # the others (one static) vanish: their sessions end them
            if client.member_id or client.instance:
                h.leave(("" if client.instance and not client.member_id else client.member_id,
                         client.instance, None))
        h.advance(NEW_MEMBER_JOIN_TIMEOUT_MS + 3 * (max(REBALANCE_TIMEOUTS) + SESSION_MS))
        unanswered = [token for token in self.owner if token not in h.responses]
        assert not unanswered
        self.check(bounded=False)
        group = h.coordinator.group("g")
        if group is not None:
            assert (group.state, group.members, group.pending_members) == (GroupState.EMPTY, {}, set())
        assert h.coordinator.pending_appends == 0


CHAOS = ("sleep", "join", "sync", "heartbeat", "commit", "leave", "complete", "fail")


Scenario = tuple[list[tuple[str, int, int]], list[tuple[int, str]]]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Steps and client profiles; in a calm scenario every client just follows its habit."""
    calm = draw(st.booleans())
    ops = ("act",) * 12 + ("advance",) * 6 + (() if calm else CHAOS)
    steps = draw(st.lists(st.tuples(st.sampled_from(ops), st.integers(0, CLIENTS - 1), st.integers(0, 25_000)),
                          min_size=40, max_size=200))
    profiles = draw(st.lists(st.tuples(st.sampled_from(REBALANCE_TIMEOUTS),
                                       st.sampled_from(["good", "good", "never-syncs", "never-rejoins"])),
                             min_size=CLIENTS, max_size=CLIENTS))
    return steps, profiles


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_dynamic_members_never_wedge_a_group(scenario: Scenario) -> None:
    steps, profiles = scenario
    driver = Driver(static=False, profiles=profiles)
    for op, index, value in steps:
        driver.step(op, index, value)
        driver.check(bounded=True)
    driver.finish()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_static_and_dynamic_members_answer_every_request(scenario: Scenario) -> None:
    steps, profiles = scenario
    driver = Driver(static=True, profiles=profiles)
    for op, index, value in steps:
        driver.step(op, index, value)
        driver.check(bounded=False)
    driver.finish()
