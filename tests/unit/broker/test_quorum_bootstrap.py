"""`controller.quorum.bootstrap.servers` (KIP-853): honoured where it names a combined node's own
controller listener (the one-voter quorum of `--standalone`), unused beside `controller.quorum.voters`
(Kafka's rule), refused with one line everywhere else."""

from __future__ import annotations

import pytest

from gregor.broker.config import BrokerConfig, ConfigError

REFUSAL = ("controller.quorum.bootstrap.servers: dynamic quorums (KIP-853) are not supported: name the voters in "
           "controller.quorum.voters")


def _config(tmp_path, **keys: str) -> BrokerConfig:
    return BrokerConfig({"process.roles": "broker,controller", "node.id": "0", "log.dirs": str(tmp_path),
                         "listeners": "PLAINTEXT://127.0.0.1:39092,CONTROLLER://127.0.0.1:39093", **keys})


@pytest.mark.parametrize("servers", ["127.0.0.1:39093", "localhost:39093"])
def test_a_combined_node_bootstrapping_from_its_own_controller_listener_is_the_embedded_quorum(tmp_path, servers):
    config = _config(tmp_path, **{"controller.quorum.bootstrap.servers": servers})
    assert config.embedded and not config.combined_quorum


def test_beside_voters_the_bootstrap_servers_are_unused(tmp_path):
    config = _config(tmp_path, **{"controller.quorum.bootstrap.servers": "10.0.0.1:9093",
                                  "controller.quorum.voters": "0@127.0.0.1:39093"})
    assert config.quorum_voters() == {0: ("127.0.0.1", 39093)}


@pytest.mark.parametrize("keys", [
    {"controller.quorum.bootstrap.servers": "10.0.0.1:39093"},
    {"controller.quorum.bootstrap.servers": "127.0.0.1:39093,127.0.0.1:39094"},
    {"controller.quorum.bootstrap.servers": "127.0.0.1:39092"},
    {"controller.quorum.bootstrap.servers": "127.0.0.1:39093", "process.roles": "broker"},
    {"controller.quorum.bootstrap.servers": "127.0.0.1:39093", "process.roles": "controller",
     "listeners": "CONTROLLER://127.0.0.1:39093"},
])
def test_any_other_dynamic_quorum_is_refused_with_one_line(tmp_path, keys):
    with pytest.raises(ConfigError) as refused:
        _config(tmp_path, **keys)
    assert str(refused.value) == REFUSAL


def test_a_bootstrap_server_that_is_not_host_port_is_named(tmp_path):
    with pytest.raises(ConfigError, match="'nonsense' is not host:port"):
        _config(tmp_path, **{"controller.quorum.bootstrap.servers": "nonsense"})
