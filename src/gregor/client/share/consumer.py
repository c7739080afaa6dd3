"""Gregor's ShareConsumer: a member of a share group (KIP-932), with Java's KafkaShareConsumer
semantics (see `base` for acknowledgements). Heartbeats and fetches run on a network thread;
`poll`, `acknowledge`, the commits and the callback run on the application's. Like Java's it is
not thread-safe, except `wakeup()`."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Iterable, Mapping

from gregor.client.consumer.records import ConsumerRecords
from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError
from gregor.client.network import NetworkThread, TopicPartition
from gregor.client.share.acknowledgements import AcknowledgeType
from gregor.client.share.base import ShareConsumerBase, failed
from gregor.client.share.records import ShareConsumerRecord
from gregor.client.thread_owner import ThreadOwner

log = logging.getLogger(__name__)
_GRACE_SECONDS = 5.0


class ShareConsumer(ShareConsumerBase):
    """Reads records of a share group; every record goes to one member at a time."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's share consumer keys in `config` and/or as keyword arguments with underscores;
        `group.id` is required."""
        super().__init__(config, kwargs)
        self._data_ready = threading.Condition()
        self._woken = False
        self._owner = ThreadOwner("ShareConsumer")
        self._fetcher.on_data = self._notify
        self._thread = NetworkThread(name=f"gregor-{self.client_id}")
        self._thread.run(self._start(), _GRACE_SECONDS)
        self._thread.spawn(self._fetcher.run(), name=f"{self.client_id}-share-fetcher")
        self._thread.spawn(self._member.heartbeat_loop(), name=f"{self.client_id}-heartbeat")

    async def _start(self) -> None:
        self._network.start()

    def _notify(self) -> None:
        with self._data_ready:
            self._data_ready.notify_all()

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Join the share group for `topics` (names; a new call replaces the subscription)."""
        with self._owner:
            self._check_open()
            self._topics = self._subscription_arg(topics)
            if not self._topics:
                self.unsubscribe()
                return
            self._network.cluster.wanted_topics.update(self._topics)
            self._thread.call_soon(self._network.request_metadata_update)
            self._thread.run(self._member.subscribe(self._topics), _GRACE_SECONDS)

    def unsubscribe(self) -> None:
        """Acknowledge what was delivered (implicit mode), and leave the group."""
        with self._owner:
            self._check_open()
            self._topics = ()
            self._commit(self._default_timeout)
            self._thread.run(self._member.leave(), _GRACE_SECONDS * 2)

    def poll(self, timeout: float = 0.0) -> ConsumerRecords:
        """Records acquired for this member (each with `delivery_count`), waiting up to `timeout`
        seconds for some. First acknowledges the last poll's records (implicit mode) or checks
        they all were (explicit mode)."""
        with self._owner:
            return self._poll(timeout)

    def _poll(self, timeout: float) -> ConsumerRecords:
        self._check_open()
        self._check_subscribed()
        self._before_poll()
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            if self._woken:
                self._woken = False
                raise KafkaException(ClientErrorCode._INTR, "the share consumer was woken up (wakeup())")
            self._run_callbacks()
            if self._membership.fatal is not None:
                raise self._membership.fatal
            error = self._fetcher.take_error()
            if error is not None:
                raise error
            records = self._fetcher.take(self._max_poll_records)
            if records:
                self._fetcher.wakeup_threadsafe()
                return self._deliver(records)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ConsumerRecords()
            with self._data_ready:
                if not self._fetcher.has_data():
                    self._data_ready.wait(min(remaining, 0.05))

    def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        """Send the acknowledgements now (implicit mode: the last poll's records, accepted) and
        wait for the brokers: the outcome per partition (None: applied)."""
        with self._owner:
            self._check_open()
            return self._commit(self._default_timeout if timeout is None else timeout)

    def acknowledge(self, record: ShareConsumerRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: ACCEPT, RELEASE or REJECT a record of the last poll (see the base's)."""
        with self._owner:
            super().acknowledge(record, type)

    def commit_async(self) -> None:
        """As `commit_sync` without waiting; the commit callback hears the outcome in a later call."""
        with self._owner:
            self._check_open()
            acknowledged = self._acknowledged()
        future = self._thread.submit(self._fetcher.commit(acknowledged, time.monotonic() + self._default_timeout))

        def done(finished: Any) -> None:
            if finished.cancelled():
                return
            error = finished.exception()
            with self._fetcher.lock:
                self._fetcher.results.extend(finished.result() if error is None else failed(acknowledged, error))
        future.add_done_callback(done)

    def _commit(self, timeout: float) -> dict[TopicPartition, KafkaException | None]:
        self._run_callbacks()
        deadline = time.monotonic() + timeout
        try:
            results = self._thread.run(self._fetcher.commit(self._acknowledged(), deadline),
                                       timeout + _GRACE_SECONDS)
        except TimeoutError:
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, "acknowledgement commit timed out") from None
        return self._report(results)

    def wakeup(self) -> None:
        """Make the current or next poll raise; safe from any thread."""
        self._woken = True
        self._notify()

    def close(self, timeout: float | None = None) -> None:
        """Acknowledge what was delivered (implicit mode), close the share sessions (the brokers
        release the records acquired and not delivered) and leave the group. Idempotent."""
        with self._owner:
            self._close(timeout)

    def _close(self, timeout: float | None) -> None:
        if self._closed:
            return
        self._closed = True
        seconds = self._default_timeout if timeout is None else timeout
        try:
            self._fetcher.stop_threadsafe()
            deadline = time.monotonic() + seconds
            self._report(self._fetcher.take_results() + self._thread.run(
                self._fetcher.commit(self._acknowledged(), deadline, closing=True), seconds + _GRACE_SECONDS))
            self._thread.run(self._member.leave(), _GRACE_SECONDS * 2)
        except KafkaException as error:
            log.warning("closing the share consumer: %s", error)
        finally:
            try:
                self._thread.run(self._network.close(), _GRACE_SECONDS)
            except KafkaException:
                pass
            self._thread.close(_GRACE_SECONDS)

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
