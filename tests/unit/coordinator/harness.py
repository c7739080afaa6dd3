"""A virtual-time driver for the coordinator: it plays the broker's part.

It owns every `__consumer_offsets` partition, keeps each appended record per partition (the
log), reports appends done (at once, or when told), and collects responses by token.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

from gregor.coordinator import AppendRecords, GroupCoordinator, GroupCoordinatorConfig, Respond
from gregor.coordinator.effects import Effect
from gregor.coordinator.results import JoinResult, OffsetCommitResult, SyncResult
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ConsumerProtocolSubscription

NOW = 1_700_000_000_000
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str, version: int = 1) -> bytes:
    """ConsumerProtocolSubscription bytes as a consumer sends them (version prefix + struct)."""
    return version.to_bytes(2, "big") + ConsumerProtocolSubscription(topics=list(topics)).encode(version)


class Harness:
    def __init__(self, config: GroupCoordinatorConfig | None = None, seed: int = 7, auto_append: bool = True,
                 load: bool = True) -> None:
        self.config = config or GroupCoordinatorConfig()
        self.coordinator = GroupCoordinator(self.config, random.Random(seed))
        self.now = NOW
        self.auto_append = auto_append
        self.responses: dict[object, list] = defaultdict(list)
        self.events: list[tuple[object, object]] = []
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.pending: list[AppendRecords] = []
        self._tokens = itertools.count(1)
        if load:
            for partition in range(self.config.offsets_topic_num_partitions):
                self.apply(self.coordinator.load_partition(partition, [], self.now))

    # -- plumbing

    def token(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self._tokens)}"

    def apply(self, effects: list[Effect]) -> list[Effect]:
        for effect in effects:
            if isinstance(effect, Respond):
                self.responses[effect.token].append(effect.result)
                self.events.append((effect.token, effect.result))
            else:
                self.log[effect.partition].extend(effect.records)
                if effect.append_id is not None:
                    self.pending.append(effect)
        if self.auto_append:
            self.complete_appends()
        return effects

    def complete_appends(self, error: ErrorCode = ErrorCode.NONE) -> None:
        while self.pending:
            append = self.pending.pop(0)
            self.apply(self.coordinator.append_done(append.append_id, error, self.now))

    def advance(self, ms: int) -> None:
        """Move virtual time forward, firing each timer at its own deadline."""
        target = self.now + ms
        while (deadline := self.coordinator.next_deadline()) is not None and deadline <= target:
            self.now = max(self.now, deadline)
            self.apply(self.coordinator.tick(self.now))
        self.now = target

    def keep_alive(self, members: list[str], generation: int, ms: int, every: int = 3000) -> None:
        """Advance `ms`, heartbeating for `members` along the way."""
        end = self.now + ms
        while self.now + every <= end:
            self.advance(every)
            for member_id in members:
                self.heartbeat(member_id, generation)
        self.advance(end - self.now)

    def advance_until(self, condition, limit_ms: int = 10 * REBALANCE_MS) -> int:
        """Advance timer by timer until `condition()` holds; returns the virtual time it took."""
        start = self.now
        while not condition():
            deadline = self.coordinator.next_deadline()
            assert deadline is not None and deadline - start <= limit_ms, "condition never became true"
            self.advance(deadline - self.now)
        return self.now - start

    def answer(self, token: object):
        """The single response `token` got; fails if it got none or several."""
        results = self.responses.get(token, [])
        assert len(results) == 1, f"{token} answered {len(results)} times: {results}"
        return results[0]

    def answered(self, token: object) -> bool:
        return bool(self.responses.get(token))

    # -- requests

    def join(self, group: str = "g", member_id: str = "", instance: str | None = None,
             protocols=(("range", b"r"),), session: int = SESSION_MS, rebalance: int = REBALANCE_MS,
             client_id: str = "client", protocol_type: str = "consumer", require_known: bool = True,
             skip: bool = False) -> str:
        token = self.token("join")
        self.apply(self.coordinator.join_group(
            token, group_id=group, member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
            protocols=protocols, session_timeout_ms=session, rebalance_timeout_ms=rebalance, client_id=client_id,
            client_host="/127.0.0.1", require_known_member_id=require_known, supports_skip_assignment=skip,
            now_ms=self.now))
        return token

    def join_now(self, **kwargs) -> JoinResult:
        return self.answer(self.join(**kwargs))

    def new_member_id(self, group: str = "g", **kwargs) -> str:
        """The id a MEMBER_ID_REQUIRED answer hands out (JoinGroup v4+)."""
        result = self.join_now(group=group, **kwargs)
        assert result.error is ErrorCode.MEMBER_ID_REQUIRED, result
        return result.member_id

    def sync(self, member_id: str, generation: int, group: str = "g", assignments=None,
             instance: str | None = None, protocol_type: str | None = None, protocol_name: str | None = None) -> str:
        token = self.token("sync")
        self.apply(self.coordinator.sync_group(
            token, group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance,
            protocol_type=protocol_type, protocol_name=protocol_name, assignments=assignments or {},
            now_ms=self.now))
        return token

    def sync_now(self, member_id: str, generation: int, **kwargs) -> SyncResult:
        return self.answer(self.sync(member_id, generation, **kwargs))

    def heartbeat(self, member_id: str, generation: int, group: str = "g", instance: str | None = None) -> ErrorCode:
        return self.coordinator.heartbeat(group_id=group, member_id=member_id, group_instance_id=instance,
                                          generation_id=generation, now_ms=self.now)

    def leave(self, *members, group: str = "g"):
        result, effects = self.coordinator.leave_group(
            group_id=group, members=[m if isinstance(m, tuple) else (m, None, None) for m in members],
            now_ms=self.now)
        self.apply(effects)
        return result

    def commit(self, offsets, group: str = "g", generation: int = -1, member_id: str = "",
               instance: str | None = None, retention: int = -1) -> str:
        token = self.token("commit")
        self.apply(self.coordinator.commit_offsets(
            token, group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance,
            retention_time_ms=retention, offsets=offsets, now_ms=self.now))
        return token

    def commit_now(self, offsets, **kwargs) -> OffsetCommitResult:
        return self.answer(self.commit(offsets, **kwargs))

    def fetch(self, group: str = "g", partitions=None, require_stable: bool = False):
        return self.coordinator.fetch_offsets(group_id=group, partitions=partitions, require_stable=require_stable,
                                              now_ms=self.now)

    # -- whole rebalances

    def form_group(self, count: int, group: str = "g", **kwargs) -> tuple[list[str], int, str]:
        """`count` dynamic members join (v4 flow) and sync; returns (member ids, generation, leader)."""
        ids = [self.new_member_id(group=group, client_id=f"c{i}", **kwargs) for i in range(count)]
        tokens = [self.join(group=group, member_id=member_id, client_id=f"c{i}", **kwargs)
                  for i, member_id in enumerate(ids)]
        self.advance_until(lambda: all(self.answered(token) for token in tokens))
        results = [self.answer(token) for token in tokens]
        assert all(result.error is ErrorCode.NONE for result in results), results
        generation, leader = results[0].generation_id, results[0].leader
        syncs = [self.sync(member_id, generation, group=group,
                           assignments={m: m.encode() for m in ids} if member_id == leader else None)
                 for member_id in ids]
        assert all(self.answer(token).error is ErrorCode.NONE for token in syncs)
        return ids, generation, leader
