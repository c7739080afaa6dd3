"""The follower side of one partition: Kafka's replica fetcher state machine, sans-IO.

A follower first makes its log a prefix of the leader's, then fetches from its log end offset:

- TRUNCATING: ask the leader (OffsetsForLeaderEpoch) where the follower's latest epoch ends in
  the leader's log and truncate there (KIP-101, KIP-279). When the leader reports an epoch the
  follower does not have, the follower truncates to the end of its own largest epoch below it and
  asks again with that epoch.
- FETCHING: fetch from the log end offset, append what comes back as is, then set the high
  watermark to min(own log end offset, leader's high watermark) and move its log start up to the
  leader's (records deleted there are deleted here, up to the high watermark). With DIVERGING_EPOCH every
  fetch carries the last fetched epoch and a mismatch comes back as the diverging epoch, handled
  like an OffsetsForLeaderEpoch answer (Fetch v12+), so the follower starts fetching at once.
- FENCED: the leader knows a newer epoch than this follower; wait for the new partition state.

With HIGH_WATERMARK (no epochs) the follower truncates to its own high watermark on becoming a
follower, as Kafka did before 0.11. Fetching past the leader's log end (possible only after an
unclean election, or without epochs) makes the follower ask where the leader's log ends and
truncate there, as Kafka does with ListOffsets; that question is asked here as
OffsetsForLeaderEpoch for the leader's own epoch, which the leader answers with its log end.

One request is in flight at a time; an answer that does not match it is ignored, and one overdue
by `replica.socket.timeout.ms` is given up and the request sent again (a fetch riding in its
link's fetch session is the link's to time out).
"""

from __future__ import annotations

from enum import Enum
from typing import Iterator

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import FetchRequest, FetchResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from gregor.replication.config import ReplicationConfig, TruncationMode
from gregor.replication.effects import Effect, SendFetch, SendOffsetsForLeaderEpoch
from gregor.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from gregor.storage.log import Log


class FetchState(Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"
    FENCED = "fenced"


class _Ask(Enum):
    FETCH = "fetch"
    EPOCH_END = "epoch_end"
    LEADER_END = "leader_end"


class _InFlight:
    """The request out, and when it was sent; None once the fetch rides with its link in a fetch
    session (`still_fetching`), whose requests the link times out for every partition riding."""

    __slots__ = ("request_id", "ask", "sent_ms")

    def __init__(self, request_id: int, ask: _Ask, sent_ms: int | None) -> None:
        self.request_id = request_id
        self.ask = ask
        self.sent_ms = sent_ms


class FollowerFetcher:
    def __init__(self, index: int, log: Log, leader_id: int, leader_epoch: int, config: ReplicationConfig,
                 request_ids: Iterator[int], now_ms: int) -> None:
        self.index = index
        self.log = log
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.config = config
        self._request_ids = request_ids
        self._in_flight: _InFlight | None = None
        self._next_send_ms = now_ms
        self._truncating_ask = _Ask.EPOCH_END
        mode = config.truncation
        if mode is TruncationMode.HIGH_WATERMARK or log.leader_epoch_cache.latest_epoch == UNDEFINED_EPOCH:
            log.truncate_to(log.high_watermark)
            self.state = FetchState.FETCHING
        elif mode is TruncationMode.OFFSETS_FOR_LEADER_EPOCH:
            self.state = FetchState.TRUNCATING
        else:
            self.state = FetchState.FETCHING

    def __repr__(self) -> str:
        return f"FollowerFetcher(leader={self.leader_id}, epoch={self.leader_epoch}, {self.state.value})"

    # -- sending

    def poll(self, now_ms: int) -> list[Effect]:
        """The next request when one is due."""
        in_flight = self._in_flight
        if in_flight is not None and in_flight.sent_ms is not None \
                and now_ms - in_flight.sent_ms >= self.config.replica_socket_timeout_ms:
            self._in_flight = in_flight = None
        if in_flight is not None or self.state is FetchState.FENCED or now_ms < self._next_send_ms:
            return []
        request_id = next(self._request_ids)
        cache = self.log.leader_epoch_cache
        if self.state is FetchState.TRUNCATING:
            ask = self._truncating_ask
            epoch = cache.latest_epoch if ask is _Ask.EPOCH_END else self.leader_epoch
            self._in_flight = _InFlight(request_id, ask, now_ms)
            return [SendOffsetsForLeaderEpoch(self.leader_id, request_id, OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=self.index, current_leader_epoch=self.leader_epoch, leader_epoch=epoch))]
        last_fetched_epoch = cache.latest_epoch if self.config.truncation is TruncationMode.DIVERGING_EPOCH else -1
        self._in_flight = _InFlight(request_id, _Ask.FETCH, now_ms)
        return [SendFetch(self.leader_id, request_id, FetchRequest.FetchPartition(
            partition=self.index, current_leader_epoch=self.leader_epoch, fetch_offset=self.log.log_end_offset,
            last_fetched_epoch=last_fetched_epoch, log_start_offset=self.log.log_start_offset,
            partition_max_bytes=self.config.replica_fetch_max_bytes))]

    def next_deadline(self) -> int | None:
        """When `poll` next sends: the backoff's end, or giving up on the request in flight (none
        while the fetch rides with its link)."""
        if self._in_flight is not None:
            sent_ms = self._in_flight.sent_ms
            return None if sent_ms is None else sent_ms + self.config.replica_socket_timeout_ms
        return None if self.state is FetchState.FENCED else self._next_send_ms

    def still_fetching(self, request_id: int) -> bool:
        """An incremental fetch session's answer left this partition out (nothing new): its fetch
        `request_id` stays in flight and rides with the link, which answers for it from then on
        (a lost request of the link fails it, `on_fetch_response`); False when that is not the
        fetch in flight (the answer must then go through `on_fetch_response`)."""
        in_flight = self._in_flight
        if in_flight is None or in_flight.request_id != request_id or in_flight.ask is not _Ask.FETCH:
            return False
        in_flight.sent_ms = None
        return True

    def _accept(self, request_id: int, asks: tuple[_Ask, ...]) -> _Ask | None:
        in_flight = self._in_flight
        if in_flight is None or in_flight.request_id != request_id or in_flight.ask not in asks:
            return None
        self._in_flight = None
        return in_flight.ask

    def _retry_after(self, delay_ms: int, now_ms: int) -> None:
        self._next_send_ms = now_ms + delay_ms

    def _on_error(self, code: ErrorCode, now_ms: int) -> None:
        if code == ErrorCode.FENCED_LEADER_EPOCH:
            self.state = FetchState.FENCED
        else:
            self._retry_after(self.config.replica_fetch_backoff_ms, now_ms)

    # -- answers

    def on_fetch_response(self, request_id: int, data: FetchResponse.PartitionData, now_ms: int) -> None:
        if self._accept(request_id, (_Ask.FETCH,)) is None:
            return
        code = data.error_code  # an int compares with the enum; made one only for an error
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._on_out_of_range(data.log_start_offset, now_ms)
            return
        if code != ErrorCode.NONE:
            self._on_error(ErrorCode(code), now_ms)
            return
        diverging = data.diverging_epoch
        if diverging.epoch >= 0:
            self.truncate_to_leader_epoch_end(diverging.epoch, diverging.end_offset)
            self._next_send_ms = now_ms
            return
        records = data.records
        if records:
            # a decoded response carries bytes; only a response being sent holds file regions
            assert isinstance(records, (bytes, bytearray, memoryview)), type(records)
            try:
                self.log.append_as_follower(records, now_ms)
            except KafkaError:
                self._retry_after(self.config.replica_fetch_backoff_ms, now_ms)
                return
        log = self.log
        log.high_watermark = max(min(data.high_watermark, log.log_end_offset), log.log_start_offset)
        if data.log_start_offset > log.log_start_offset:
            # the leader deleted records (DeleteRecords, retention): so does the follower, up to
            # its own high watermark, as Kafka's maybeIncrementLogStartOffset
            log.delete_records_before(min(data.log_start_offset, log.high_watermark))
        self._next_send_ms = now_ms  # the leader holds a fetch until records come: ask again at once

    def _on_out_of_range(self, leader_log_start_offset: int, now_ms: int) -> None:
        log = self.log
        if leader_log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(leader_log_start_offset)
        else:
            self.state = FetchState.TRUNCATING
            self._truncating_ask = _Ask.LEADER_END
        self._next_send_ms = now_ms

    def on_epoch_end_response(self, request_id: int, data: OffsetForLeaderEpochResponse.EpochEndOffset,
                              now_ms: int) -> None:
        ask = self._accept(request_id, (_Ask.EPOCH_END, _Ask.LEADER_END))
        if ask is None:
            return
        code = ErrorCode(data.error_code)
        if code != ErrorCode.NONE:
            self._on_error(code, now_ms)
            return
        if ask is _Ask.LEADER_END:
            if 0 <= data.end_offset < self.log.log_end_offset:
                self.log.truncate_to(data.end_offset)
            done = True
        else:
            done = self.truncate_to_leader_epoch_end(data.leader_epoch, data.end_offset)
        self.state = FetchState.FETCHING if done else FetchState.TRUNCATING
        self._truncating_ask = _Ask.EPOCH_END
        self._next_send_ms = now_ms

    def truncate_to_leader_epoch_end(self, leader_epoch: int, leader_end_offset: int) -> bool:
        """Truncate as Kafka's getOffsetTruncationState decides; False when another round is needed.

        The leader said its largest epoch <= the one asked is `leader_epoch` and ends at
        `leader_end_offset`. If this log has that epoch, everything past the smaller of the two
        ends goes. If it does not, the log is cut to the end of its own largest epoch below, and
        the leader is asked again about that one.
        """
        log = self.log
        end = log.log_end_offset
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
            target, done = log.high_watermark, True
        elif leader_epoch == UNDEFINED_EPOCH:
            target, done = min(leader_end_offset, end), True
        else:
            local = log.leader_epoch_cache.end_offset_for(leader_epoch, end)
            if local.end_offset == UNDEFINED_EPOCH_OFFSET:
                target, done = min(leader_end_offset, end), True
            elif local.epoch != leader_epoch:
                target, done = min(local.end_offset, end), False
            else:
                target, done = min(local.end_offset, leader_end_offset, end), True
        log.truncate_to(target)
        return done
