"""`controller.quorum.voters` parsing."""

from __future__ import annotations

import pytest

from gregor.raft.voters import VoterAddress, parse_quorum_voters


def test_parses_ids_hosts_and_ports():
    assert parse_quorum_voters("1@localhost:9093, 2@10.0.0.2:9094,3@[::1]:9095") == {
        1: VoterAddress("localhost", 9093), 2: VoterAddress("10.0.0.2", 9094), 3: VoterAddress("::1", 9095)}
    assert parse_quorum_voters("") == {}


@pytest.mark.parametrize("value", ["1localhost:9093", "x@host:1", "1@host", "1@:9093", "1@host:port",
                                   "1@h:1,1@h:2"])
def test_refuses_malformed_or_repeated_entries(value):
    with pytest.raises(ValueError):
        parse_quorum_voters(value)
