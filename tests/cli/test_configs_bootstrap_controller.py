"""`gregor configs --bootstrap-controller` (KIP-919): exclusive with --bootstrap-server, as
Kafka's tools say it, and for broker configs only (Gregor's controllers describe no topic, group
or quota configs): every refusal is one line, exit 2, before any connection. The tool against
controllers is tested in tests/security/test_reload_cluster.py and tests/cluster/test_controller_quorum.py."""

from __future__ import annotations

import pytest

from tests.broker_process import free_port
from tests.cli.conftest import in_process, one_error_line

CONTROLLER = ["configs", "--bootstrap-controller", "127.0.0.1:1"]


@pytest.mark.parametrize("args, message", [
    ([*CONTROLLER, "--bootstrap-server", "127.0.0.1:2", "--describe", "--broker", "1"],
     "You cannot specify both --bootstrap-controller and --bootstrap-server."),
    (["configs", "--describe", "--broker", "1"],
     "missing required option --bootstrap-server HOST:PORT (or --bootstrap-controller HOST:PORT)"),
    ([*CONTROLLER, "--describe", "--entity-type", "topics"],
     "the configs of topics and groups are managed through the brokers: use --bootstrap-server"),
    ([*CONTROLLER, "--alter", "--group", "g", "--add-config", "consumer.session.timeout.ms=50000"],
     "the configs of topics and groups are managed through the brokers"),
    ([*CONTROLLER, "--describe", "--entity-type", "users", "--entity-name", "alice"],
     "the configs of users, clients and ips are managed through the brokers"),
])
def test_refusals(capsys, args, message):
    result = in_process(capsys, *args)
    assert result.returncode == 2
    assert message in one_error_line(result)


def test_no_controller_listening_is_one_line_naming_the_flag(capsys):
    address = f"127.0.0.1:{free_port()}"
    result = in_process(capsys, "configs", "--bootstrap-controller", address, "--timeout", "500", "--describe",
                        "--entity-type", "brokers")
    assert result.returncode == 1
    assert f"cannot reach the cluster at {address} within 500 ms: is a controller running there? " \
           f"Check --bootstrap-controller" in one_error_line(result)
