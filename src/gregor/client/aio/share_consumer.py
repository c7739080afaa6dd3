"""The asyncio ShareConsumer: the sync `gregor.client.ShareConsumer`'s semantics (see
`gregor.client.share.base`) with `await consumer.poll()`, on the caller's event loop; the
heartbeat and the fetcher are tasks of that loop. `acknowledge` stays a plain call."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Iterable, Mapping

from gregor.client.aio.binding import LoopBinding, check_timeout
from gregor.client.consumer.records import ConsumerRecords
from gregor.client.errors import KafkaException
from gregor.client.network import TopicPartition
from gregor.client.share.base import ShareConsumerBase, failed

log = logging.getLogger(__name__)


class ShareConsumer(ShareConsumerBase):
    """Use it as `async with ShareConsumer(...)`, or call `start()` (optional) and `close()`."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(config, kwargs)
        self._binding = LoopBinding("share consumer")
        self._data = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._fetcher.on_data = self._data.set

    async def start(self) -> None:
        self._ready()

    def _ready(self) -> None:
        self._check_open()
        if self._binding.bind():
            self._network.start()
            self._spawn(self._fetcher.run(), "share-fetcher")
            self._spawn(self._member.heartbeat_loop(), "heartbeat")

    def _spawn(self, coro: Any, what: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.client_id}-{what}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def __aenter__(self) -> ShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def subscribe(self, topics: Iterable[str] | str) -> None:
        """Join the share group for `topics` (names; a new call replaces the subscription, and no
        topics leaves the group, in a task, as `unsubscribe`)."""
        self._ready()
        self._topics = self._subscription_arg(topics)
        if not self._topics:
            self._spawn(self.unsubscribe(), "unsubscribe")
            return
        self._network.cluster.wanted_topics.update(self._topics)
        self._network.request_metadata_update()
        self._spawn(self._member.subscribe(self._topics), "subscribe")

    async def unsubscribe(self) -> None:
        """Acknowledge what was delivered (implicit mode), and leave the group."""
        self._ready()
        self._topics = ()
        await self._commit(self._default_timeout)
        await self._member.leave()

    async def poll(self, timeout: float = 0.0) -> ConsumerRecords:
        """As the sync consumer's `poll`: records with `delivery_count`, waiting up to `timeout` s."""
        seconds = check_timeout(timeout) or 0.0
        self._ready()
        self._check_subscribed()
        self._before_poll()
        deadline = time.monotonic() + seconds
        while True:
            self._run_callbacks()
            if self._membership.fatal is not None:
                raise self._membership.fatal
            self._data.clear()
            error = self._fetcher.take_error()
            if error is not None:
                raise error
            records = self._fetcher.take(self._max_poll_records)
            if records:
                self._fetcher.wakeup()
                return self._deliver(records)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ConsumerRecords()
            try:
                async with asyncio.timeout(remaining):
                    await self._data.wait()
            except TimeoutError:
                pass

    async def commit_sync(self, timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        """Send the acknowledgements now and wait for the brokers: the outcome per partition."""
        self._ready()
        seconds = check_timeout(timeout)
        return await self._commit(self._default_timeout if seconds is None else seconds)

    def commit_async(self) -> None:
        """As `commit_sync` in a task; the commit callback hears the outcome in a later call."""
        self._ready()
        acknowledged = self._acknowledged()

        async def commit() -> None:
            try:
                results = await self._fetcher.commit(acknowledged, time.monotonic() + self._default_timeout)
            except KafkaException as error:
                results = failed(acknowledged, error)
            with self._fetcher.lock:
                self._fetcher.results.extend(results)
        self._spawn(commit(), "commit")

    async def _commit(self, timeout: float) -> dict[TopicPartition, KafkaException | None]:
        self._run_callbacks()
        return self._report(await self._fetcher.commit(self._acknowledged(), time.monotonic() + timeout))

    async def close(self, timeout: float | None = None) -> None:
        """Acknowledge what was delivered (implicit mode), close the share sessions and leave. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._binding.loop is None:
            return
        seconds = check_timeout(timeout)
        try:
            self._fetcher.stop_threadsafe()
            deadline = time.monotonic() + (self._default_timeout if seconds is None else seconds)
            self._report(self._fetcher.take_results()
                         + await self._fetcher.commit(self._acknowledged(), deadline, closing=True))
            await self._member.leave()
        except KafkaException as error:
            log.warning("closing the share consumer: %s", error)
        finally:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._network.close()
