"""The `controllers` fixture: three controller processes with a short broker session."""

from __future__ import annotations

import pytest

from tests.cluster.quorum import SESSION_MS, make_quorum


@pytest.fixture
def controllers(tmp_path):
    nodes = make_quorum(tmp_path)
    for node in nodes:
        node.overrides["broker.session.timeout.ms"] = str(SESSION_MS)
        node.start()
    yield nodes
    for node in nodes:
        node.stop()
