"""Interceptor chains: order, passing results along, isolation of failures, resolution."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gregor.client.config import ConfigError
from gregor.client.interceptors import (
    ConsumerInterceptor,
    ConsumerInterceptors,
    ProducerInterceptor,
    ProducerInterceptors,
    resolve_consumer_interceptors,
    resolve_producer_interceptors,
)


class Appending(ProducerInterceptor[list]):
    """Adds its tag to the record and remembers acknowledgements."""

    def __init__(self, tag: str = "a") -> None:
        self.tag = tag
        self.acknowledged: list[tuple[Any, BaseException | None]] = []
        self.closed = False

    def on_send(self, record: list) -> list:
        return [*record, self.tag]

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        self.acknowledged.append((metadata, exception))

    def close(self) -> None:
        self.closed = True


class Broken(ProducerInterceptor[list]):
    def on_send(self, record: list) -> list:
        raise RuntimeError("on_send broke")

    def on_acknowledgement(self, metadata: Any, exception: BaseException | None) -> None:
        raise RuntimeError("on_acknowledgement broke")

    def close(self) -> None:
        raise RuntimeError("close broke")


class Counting(ConsumerInterceptor[list]):
    def __init__(self) -> None:
        self.commits: list[Any] = []
        self.closed = False

    def on_consume(self, records: list) -> list:
        return [record * 2 for record in records]

    def on_commit(self, offsets: Any) -> None:
        self.commits.append(offsets)

    def close(self) -> None:
        self.closed = True


class BrokenConsumer(ConsumerInterceptor[list]):
    def on_consume(self, records: list) -> list:
        raise ValueError("on_consume broke")

    def on_commit(self, offsets: Any) -> None:
        raise ValueError("on_commit broke")

    def close(self) -> None:
        raise ValueError("close broke")


def test_producer_chain_calls_in_order_passing_each_result_on() -> None:
    first, second = Appending("first"), Appending("second")
    chain = ProducerInterceptors([first, second])
    assert chain.on_send(["record"]) == ["record", "first", "second"]
    error = TimeoutError("expired")
    chain.on_acknowledgement("metadata", error)
    assert first.acknowledged == second.acknowledged == [("metadata", error)]
    chain.close()
    assert first.closed and second.closed


def test_a_failing_producer_interceptor_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    before, after = Appending("before"), Appending("after")
    chain = ProducerInterceptors([before, Broken(), after])
    with caplog.at_level(logging.WARNING, logger="gregor.client.interceptors"):
        assert chain.on_send(["r"]) == ["r", "before", "after"]
        chain.on_acknowledgement("m", None)
        chain.close()
    assert after.acknowledged == [("m", None)] and after.closed
    messages = [record.getMessage() for record in caplog.records]
    assert messages == ["producer interceptor Broken failed in on_send",
                        "producer interceptor Broken failed in on_acknowledgement",
                        "failed to close producer interceptor Broken"]
    assert all(record.exc_info for record in caplog.records)


def test_interceptors_do_not_swallow_keyboard_interrupt() -> None:
    class Interrupting(ProducerInterceptor[Any]):
        def on_send(self, record: Any) -> Any:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ProducerInterceptors([Interrupting()]).on_send("r")


def test_consumer_chain_order_and_isolation(caplog: pytest.LogCaptureFixture) -> None:
    first, second = Counting(), Counting()
    chain = ConsumerInterceptors([first, BrokenConsumer(), second])
    with caplog.at_level(logging.WARNING, logger="gregor.client.interceptors"):
        assert chain.on_consume([1, 2]) == [4, 8]
        chain.on_commit({"t-0": 5})
        chain.close()
    assert first.commits == second.commits == [{"t-0": 5}]
    assert first.closed and second.closed
    assert [record.getMessage() for record in caplog.records] == [
        "consumer interceptor BrokenConsumer failed in on_consume",
        "consumer interceptor BrokenConsumer failed in on_commit",
        "failed to close consumer interceptor BrokenConsumer"]


def test_base_classes_pass_everything_through() -> None:
    assert ProducerInterceptors([ProducerInterceptor()]).on_send("r") == "r"
    assert ConsumerInterceptors([ConsumerInterceptor()]).on_consume(["r"]) == ["r"]
    assert not ProducerInterceptors([])
    assert ConsumerInterceptors([Counting()])


def test_resolve_classes_instances_and_import_paths() -> None:
    instance = Appending("mine")
    chain = resolve_producer_interceptors([Appending, instance, f"{__name__}:Appending"])
    assert [type(interceptor) for interceptor in chain.interceptors] == [Appending] * 3
    assert chain.interceptors[1] is instance
    assert chain.on_send([]) == ["a", "mine", "a"]
    consumers = resolve_consumer_interceptors((f"{__name__}.Counting",))
    assert type(consumers.interceptors[0]) is Counting
    assert not resolve_producer_interceptors(())


def test_resolve_refuses_the_wrong_side_and_closes_what_it_built() -> None:
    built = Appending()
    with pytest.raises(ConfigError, match="interceptor.classes: <class '.*Counting'> is not a producer "
                                          "interceptor \\(no on_send, on_acknowledgement\\)"):
        resolve_producer_interceptors([built, Counting])
    assert built.closed
    with pytest.raises(ConfigError, match="interceptor.classes: cannot import 'nowhere:Nothing'"):
        resolve_consumer_interceptors(["nowhere:Nothing"])
    with pytest.raises(ConfigError, match="is not a consumer interceptor \\(no on_consume, on_commit, close\\)"):
        resolve_consumer_interceptors([object()])
