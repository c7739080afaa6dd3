"""`controller.quorum.voters`: `id@host:port` entries separated by commas, as Kafka writes them."""

from __future__ import annotations

from typing import NamedTuple


class VoterAddress(NamedTuple):
    host: str
    port: int


def parse_quorum_voters(value: str) -> dict[int, VoterAddress]:
    """The voters by id; ValueError naming the entry when one is malformed or repeated."""
    voters: dict[int, VoterAddress] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        node, at, address = entry.partition("@")
        host, colon, port = address.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not at or not colon or not host or not node.strip().isdigit() or not port.isdigit():
            raise ValueError(f"controller.quorum.voters entry {entry!r} is not id@host:port")
        voter_id = int(node)
        if voter_id in voters:
            raise ValueError(f"controller.quorum.voters names voter {voter_id} twice")
        voters[voter_id] = VoterAddress(host, int(port))
    return voters
