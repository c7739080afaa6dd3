"""Closing a librdkafka ShareConsumer with a bound on the wait (the share tests' closes).

librdkafka's ShareConsumer (a preview) once hung in `close()` for good in a loaded suite run
(rd_kafka_consumer_close0 waiting on its queue, the broker's group already empty): a C call that
never returns keeps pytest-timeout's signal from firing and the suite from ending. Closing in a
daemon thread turns such a hang into this test's failure, with its cluster still stopped.
"""

from __future__ import annotations

import threading

CLOSE_WAIT_S = 60.0


def close_share_consumer(consumer, wait_s: float = CLOSE_WAIT_S) -> None:
    closing = threading.Thread(target=consumer.close, name="share-consumer-close", daemon=True)
    closing.start()
    closing.join(wait_s)
    assert not closing.is_alive(), f"librdkafka's ShareConsumer.close() did not return within {wait_s:.0f} s"
