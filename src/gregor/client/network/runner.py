"""The client's network thread: one daemon thread running one asyncio loop per client instance.

All network I/O of a client (its `NetworkClient`, connections, metadata refresher, and later a
producer's sender loop or a consumer's fetcher and heartbeat) runs as coroutines and tasks on
this loop; user-facing methods stay synchronous and hand work over with the thread-safe calls:

- `run(coro, timeout)` — run a coroutine on the loop and wait for its result in the caller's
  thread; on timeout the coroutine is cancelled and `KafkaTimeoutError(_TIMED_OUT)` raised.
- `submit(coro)` — the same without waiting: a `concurrent.futures.Future`.
- `spawn(coro, name)` — start a long-lived task (a sender loop, a heartbeat) that `close`
  cancels; returns a `concurrent.futures.Future` of the task's result.
- `call_soon(callback, *args)` — run a plain callback on the loop (wake a task, set an event).
- `close(timeout)` — stop the loop, cancel every task still on it and wait for them (on the
  network thread), close the loop; the caller joins the thread for up to `timeout`.
  Idempotent. Owners close their own objects first (`run(network.close())`) so that
  shutdown is orderly, then close the thread.

Calling `run` from the network thread itself would wait for itself, so it raises `_STATE`;
code on the loop awaits coroutines directly. After `close`, every call raises `_DESTROY`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

from gregor.client.errors import ClientErrorCode, KafkaException, KafkaTimeoutError

T = TypeVar("T")


class NetworkThread:
    """A daemon thread with its own event loop, and the bridge from other threads into it."""

    def __init__(self, name: str = "gregor-network") -> None:
        self._loop = asyncio.new_event_loop()
        self._closed = False
        self._lock = threading.Lock()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, args=(ready,), name=name, daemon=True)
        self._thread.start()
        ready.wait()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def running(self) -> bool:
        """Whether the thread is still alive (it stops in `close`)."""
        return self._thread.is_alive()

    def in_network_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; its result or exception arrives in the returned future."""
        with self._lock:
            if self._closed:
                coro.close()
                raise KafkaException(ClientErrorCode._DESTROY, "the client is closed")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and return its result; raise what it raises.

        `timeout` in seconds (None: no limit). When it passes, the coroutine is cancelled and
        KafkaTimeoutError(_TIMED_OUT) raised.
        """
        if self.in_network_thread():
            coro.close()
            raise KafkaException(ClientErrorCode._STATE, "blocking call made from the client's network thread")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"operation timed out after {timeout} s") from None
        except concurrent.futures.CancelledError:
            raise KafkaException(ClientErrorCode._DESTROY, "the client was closed during the operation") from None

    def spawn(self, coro: Coroutine[Any, Any, T], name: str | None = None) -> concurrent.futures.Future[T]:
        """Start a long-lived task on the loop; `close` cancels it if it is still running."""
        return self.submit(self._named(coro, name))

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run `callback(*args)` on the loop thread (safe from any thread)."""
        with self._lock:
            if self._closed:
                raise KafkaException(ClientErrorCode._DESTROY, "the client is closed")
            self._loop.call_soon_threadsafe(callback, *args)

    def close(self, timeout: float | None = None) -> None:
        """Stop the loop and join the thread (at most `timeout` s). The thread itself then cancels
        and awaits every task still on the loop before closing it, so that none is left pending
        (no "Task was destroyed but it is pending!") however short `timeout` is."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.in_network_thread():
            raise KafkaException(ClientErrorCode._STATE, "close() called from the client's network thread")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    # loop side

    def _run_loop(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(ready.set)
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._cancel_all())
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    @staticmethod
    async def _named(coro: Awaitable[T], name: str | None) -> T:
        if name is not None:
            asyncio.current_task().set_name(name)
        return await coro

    async def _cancel_all(self) -> None:
        """Cancel every other task and wait for it, again for tasks started meanwhile (a
        `finally` that schedules work), until the loop holds none."""
        while tasks := [task for task in asyncio.all_tasks(self._loop) if task is not asyncio.current_task()]:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
