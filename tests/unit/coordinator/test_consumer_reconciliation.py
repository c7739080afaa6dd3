"""Reconciliation: whatever members do, no partition is ever owned by two of them at once, and a
quiet group ends Stable with every partition assigned (a property test over the coordinator)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.coordinator import GroupCoordinatorConfig
from gregor.coordinator.consumer.assignment import pairs
from gregor.protocol.error_codes import ErrorCode
from tests.unit.coordinator.consumer_harness import ConsumerHarness

OPS = st.lists(st.tuples(st.sampled_from(["join", "leave", "heartbeat", "heartbeat", "heartbeat", "grow", "kill"]),
                         st.integers(0, 5), st.sampled_from(["uniform", "range"])), min_size=1, max_size=60)


class Client:
    """A cooperative member: it gives up revoked partitions at once and reports what it owns."""

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.epoch = 0
        self.owned: dict = {}
        self.alive = True

    def heartbeat(self, h: ConsumerHarness, assignor: str) -> None:
        if self.epoch == 0:
            result = h.cg(self.member_id, 0, topics=("t1", "t2"), assignor=assignor)
        else:
            result = h.cg(self.member_id, self.epoch, owned=self.owned)
        if result.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self.epoch, self.owned = 0, {}
            return
        assert result.error is ErrorCode.NONE, result
        self.epoch = result.member_epoch
        if result.assignment is not None:
            self.owned = dict(result.assignment)


def check_exclusive(clients: list[Client]) -> None:
    seen: dict = {}
    for client in clients:
        if client.alive:
            for key in pairs(client.owned):
                assert key not in seen, f"{key} owned by {seen[key]} and {client.member_id}"
                seen[key] = client.member_id


@settings(max_examples=120, deadline=None)
@given(OPS)
def test_no_partition_has_two_owners_and_a_quiet_group_converges(ops):
    h = ConsumerHarness(GroupCoordinatorConfig(offsets_topic_num_partitions=1))
    counts = {"t1": 4, "t2": 3}
    h.set_topics(**counts)
    clients: list[Client] = []
    for op, index, assignor in ops:
        live = [c for c in clients if c.alive]
        if op == "join" or not live:
            clients.append(Client(f"m{len(clients)}"))
            clients[-1].heartbeat(h, assignor)
        elif op == "leave":
            client = live[index % len(live)]
            h.cg(client.member_id, -1)
            client.alive = False
        elif op == "kill":
            live[index % len(live)].alive = False
        elif op == "grow":
            counts["t1"] += 1
            h.set_topics(**counts)
        else:
            live[index % len(live)].heartbeat(h, assignor)
        h.advance(1000)
        check_exclusive(clients)
    for _ in range(10):  # quiet rounds: the survivors heartbeat, the killed ones' sessions end
        for client in clients:
            if client.alive:
                client.heartbeat(h, "uniform")
                check_exclusive(clients)
        h.advance(h.config.group_consumer_session_timeout_ms // 2)
    group = h.coordinator.consumer_groups["g"]
    live = [c for c in clients if c.alive]
    assert sorted(group.members) == sorted(c.member_id for c in live)
    if live:
        assert group.state.value == "Stable"
        owned = sorted(key for client in live for key in pairs(client.owned))
        assert len(owned) == counts["t1"] + counts["t2"]
