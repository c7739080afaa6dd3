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


def _bindings(*flags: str) -> set[tuple[str, str, str, str, str, str]]:
    from gregor.cli import acls
    from gregor.cli.main import build_parser
    args = build_parser().parse_args(["acls", *NOWHERE, "--add", *flags])
    return {(b.resource_type.name, b.name, b.principal, b.host, b.operation.name, b.permission_type.name)
            for b in acls.acl_bindings(args, acls.AclPatternType.LITERAL)}


def test_the_producer_and_consumer_conveniences_expand_as_kafka_acls_does():
    assert _bindings("--allow-principal", "User:p", "--producer", "--topic", "t", "--idempotent") == {
        ("TOPIC", "t", "User:p", "*", op, "ALLOW") for op in ("WRITE", "DESCRIBE", "CREATE")} | {
        ("CLUSTER", "kafka-cluster", "User:p", "*", "IDEMPOTENT_WRITE", "ALLOW")}
    assert _bindings("--allow-principal", "User:c", "--consumer", "--topic", "t", "--group", "g") == {
        ("TOPIC", "t", "User:c", "*", "READ", "ALLOW"), ("TOPIC", "t", "User:c", "*", "DESCRIBE", "ALLOW"),
        ("GROUP", "g", "User:c", "*", "READ", "ALLOW")}


def test_principals_hosts_and_operations_multiply():
    assert _bindings("--allow-principal", "User:a", "--deny-principal", "User:b", "--deny-host", "10.0.0.1",
                     "--operation", "Read", "--operation", "describe_configs", "--topic", "t") == {
        ("TOPIC", "t", "User:a", "*", "READ", "ALLOW"), ("TOPIC", "t", "User:a", "*", "DESCRIBE_CONFIGS", "ALLOW"),
        ("TOPIC", "t", "User:b", "10.0.0.1", "READ", "DENY"),
        ("TOPIC", "t", "User:b", "10.0.0.1", "DESCRIBE_CONFIGS", "DENY")}
    assert {op for *_, op, _ in _bindings("--allow-principal", "User:a", "--cluster")} == {"ALL"}
