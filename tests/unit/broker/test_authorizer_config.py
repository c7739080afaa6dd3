"""The authorization and quota keys: Kafka's StandardAuthorizer is accepted, any other class is
refused at start with one line naming the key, `super.users` is Kafka's ';'-separated list."""

from __future__ import annotations

import pytest

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.metadata.authorizer import STANDARD_AUTHORIZER


def test_kafkas_standard_authorizer_is_accepted_and_super_users_are_parsed():
    config = BrokerConfig({"authorizer.class.name": STANDARD_AUTHORIZER,
                           "super.users": "User:admin; User:CN=broker,O=Org ;"})
    assert config.super_users == {"User:admin", "User:CN=broker,O=Org"}
    assert BrokerConfig().get("authorizer.class.name") == "" and BrokerConfig().super_users == frozenset()


@pytest.mark.parametrize("name", ["kafka.security.authorizer.AclAuthorizer", "com.example.MyAuthorizer"])
def test_an_authorizer_gregor_does_not_know_is_refused_at_start(name):
    with pytest.raises(ConfigError, match=f"authorizer.class.name: Gregor does not know {name}"):
        BrokerConfig({"authorizer.class.name": name})


def test_quota_windows_must_be_positive():
    with pytest.raises(ConfigError, match="quota.window.num: must be at least 1"):
        BrokerConfig({"quota.window.num": "0"})
