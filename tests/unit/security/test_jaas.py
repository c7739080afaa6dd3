"""The `sasl.jaas.config` values Kafka's documentation shows, and malformed ones refused."""

from __future__ import annotations

import pytest

from gregor.protocol.jaas import PLAIN_MODULE, parse_jaas


def test_plain_users_and_login():
    jaas = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                      'password="admin-secret" user_admin="admin-secret" user_alice="alice \\"quoted\\"";')
    assert jaas.module == PLAIN_MODULE
    assert jaas.options["username"] == "admin"
    assert jaas.users() == {"admin": "admin-secret", "alice": 'alice "quoted"'}


def test_unquoted_values_and_no_options():
    assert parse_jaas("x.ScramLoginModule required username=bob password=pw ;").options == {
        "username": "bob", "password": "pw"}
    assert parse_jaas("x.PlainLoginModule required;").options == {}


@pytest.mark.parametrize("text", ['x.PlainLoginModule required username="a"',
                                  'username="a";', 'x.PlainLoginModule maybe username="a";'])
def test_malformed_entries_are_refused(text):
    with pytest.raises(ValueError, match="sasl.jaas.config"):
        parse_jaas(text)
