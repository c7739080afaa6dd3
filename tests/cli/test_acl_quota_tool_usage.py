"""Wrong usage of `gregor acls` and of `gregor configs` for quotas: one line on stderr, exit code
2, found before any connection is made."""

from __future__ import annotations

import pytest

from tests.cli.conftest import in_process, one_error_line

NOWHERE = ["--bootstrap-server", "127.0.0.1:1"]


@pytest.mark.parametrize("args, message", [
    (["acls", *NOWHERE], "--add"),
    (["acls", *NOWHERE, "--add", "--list", "--topic", "t"], "--add"),
    (["acls", *NOWHERE, "--add", "--topic", "t", "--operation", "Read"], "--add needs --allow-principal"),
    (["acls", *NOWHERE, "--add", "--allow-principal", "alice", "--topic", "t"], "is not Type:name"),
    (["acls", *NOWHERE, "--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"],
     "unknown operation 'Fly'"),
    (["acls", *NOWHERE, "--add", "--allow-principal", "User:a", "--operation", "Read"], "name a resource"),
    (["acls", *NOWHERE, "--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"], "--consumer needs --group"),
    (["acls", *NOWHERE, "--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
     "--add takes --resource-pattern-type literal or prefixed"),
    (["acls", *NOWHERE, "--list", "--topic", "t", "--resource-pattern-type", "glob"], "--resource-pattern-type 'glob'"),
    (["acls", *NOWHERE, "--add", "--allow-principal", "User:a", "--cluster", "--resource-pattern-type", "prefixed"],
     "a prefixed pattern cannot name the cluster"),
    (["acls", *NOWHERE, "--remove", "--topic", "t", "--principal", "User:a"], "--principal works with --list only"),
    (["configs", *NOWHERE, "--alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"],
     "--alter needs an entity: --entity-name NAME or --entity-default"),
    (["configs", *NOWHERE, "--alter", "--entity-type", "users", "--entity-name", "a", "--entity-default"],
     "give --entity-name or --entity-default, not both"),
    (["configs", *NOWHERE, "--alter", "--user", "a", "--user-defaults"], "name the user once"),
    (["configs", *NOWHERE, "--alter", "--user", "a"], "--alter needs --add-config"),
    (["configs", *NOWHERE, "--alter", "--client", "c", "--add-config", "producer_byte_rate=fast"],
     "a quota is a number"),
    (["configs", *NOWHERE, "--describe", "--user", "a", "--topic", "t"], "cannot be combined with --topic"),
])
def test_wrong_options(capsys, args, message):
    result = in_process(capsys, *args)
    assert result.returncode == 2
    assert message in one_error_line(result)
