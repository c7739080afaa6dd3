"""Shared fixtures: a real `gregor server` process per test module."""

from __future__ import annotations

import pytest

from tests.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor") / "data"),
                            {"message.max.bytes": "200000"})
    process.start()
    yield process
    process.stop()


@pytest.fixture
def broker_factory(tmp_path):
    started = []

    def make(overrides=None):
        process = BrokerProcess(str(tmp_path / f"data{len(started)}"), overrides)
        process.start()
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()
