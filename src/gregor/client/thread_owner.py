"""The one-thread rule of Java's consumers (KafkaConsumer, KafkaShareConsumer): a client used by
a second thread while one is inside it raises instead of corrupting its state (Java's
ConcurrentModificationException). The owning thread may re-enter (a listener calling commit)."""

from __future__ import annotations

import threading

from gregor.client.errors import ClientErrorCode, KafkaException


class ThreadOwner:
    """`acquire`/`release` around each call of a client, or `with owner:`."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._lock:
            if self._owner is not None and self._owner != me:
                raise KafkaException(ClientErrorCode._STATE,
                                     f"{self._what} is not safe for multi-threaded access: another thread is using "
                                     f"it; use one consumer per thread (only wakeup() may be called from elsewhere)")
            self._owner = me
            self._depth += 1

    def release(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()
