"""OAUTHBEARER with unsecured JWTs, as Kafka's development validator checks them, and the client's
tokens made from the unsecuredLogin* JAAS options."""

from __future__ import annotations

import pytest

from gregor.broker.security.sasl_mechanisms import OAuthBearerExchange, SaslFailure
from gregor.client.config import ConfigError, Role, parse_config
from gregor.client.network.security import ClientSecurity
from gregor.protocol.oauthbearer import UnsecuredValidator, client_message, unsecured_token
from gregor.protocol.sasl_login import SaslLogin

NOW_MS = 1_800_000_000_000
NOW_S = NOW_MS // 1000


def _exchange(**options: str) -> OAuthBearerExchange:
    return OAuthBearerExchange(UnsecuredValidator.from_options(options), lambda: NOW_MS)


def test_a_valid_token_gives_its_subject():
    exchange = _exchange()
    assert exchange.respond(client_message(unsecured_token({"sub": "alice", "exp": NOW_S + 60}))) == b""
    assert exchange.principal == "User:alice"


@pytest.mark.parametrize("claims, options, reason", [
    ({"sub": "alice", "exp": NOW_S - 1}, {}, "expired"),
    ({"sub": "alice"}, {}, "no numeric 'exp'"),
    ({"exp": NOW_S + 60}, {}, "no 'sub' claim"),
    ({"sub": "alice", "exp": NOW_S + 60, "scope": "read"}, {"unsecuredValidatorRequiredScope": "read write"},
     "lacks the required scope write"),
    ({"sub": "alice", "exp": NOW_S + 60, "iat": NOW_S + 30}, {}, "issued in the future"),
])
def test_a_bad_token_gets_the_error_json_then_fails(claims, options, reason):
    exchange = _exchange(**options)
    assert exchange.respond(client_message(unsecured_token(claims))) == b'{"status":"invalid_token"}'
    with pytest.raises(SaslFailure, match=reason):
        exchange.respond(b"\x01")
    assert exchange.principal is None


def test_a_signed_token_and_other_claim_names():
    exchange = _exchange()
    exchange.respond(client_message(unsecured_token({"sub": "a", "exp": NOW_S + 60}) + "c2lnbmF0dXJl"))
    with pytest.raises(SaslFailure, match="not an unsecured JWT"):
        exchange.respond(b"\x01")
    named = _exchange(unsecuredValidatorPrincipalClaimName="user", unsecuredValidatorAllowableClockSkewMs="5000")
    named.respond(client_message(unsecured_token({"user": "bob", "exp": NOW_S - 2})))
    assert named.principal == "User:bob"  # expired 2 s ago, within the 5 s skew


def test_the_client_makes_a_token_from_its_jaas_options():
    config = parse_config(Role.PRODUCER, {
        "bootstrap.servers": "localhost:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            'unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",read,write" '
                            'unsecuredLoginLifetimeSeconds="60";'})
    security = ClientSecurity.from_config(config)
    login = SaslLogin("OAUTHBEARER", security.username, security.login_secret(NOW_S), "test")
    request = login.next(type("Handshake", (), {"error_code": 0})())
    exchange = _exchange(unsecuredValidatorRequiredScope="write")
    assert exchange.respond(request.auth_bytes) == b""
    assert exchange.principal == "User:alice"
    with pytest.raises(ConfigError, match="unsecuredLoginStringClaim_sub"):
        ClientSecurity.from_config({**config, "sasl.jaas.config": "x.OAuthBearerLoginModule required;"})


def test_the_client_reads_a_signed_token_from_a_file(tmp_path):
    base = {"bootstrap.servers": "localhost:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}
    token = tmp_path / "token.jwt"
    token.write_text("header.claims.signature\n")
    security = ClientSecurity.from_config(parse_config(Role.PRODUCER, {
        **base, "sasl.oauthbearer.token.endpoint.url": f"file://{token}"}))
    assert security.login_secret(NOW_S) == "header.claims.signature"
    token.write_text("rotated.claims.signature")
    assert security.login_secret(NOW_S) == "rotated.claims.signature"  # read at each login
    for extra, message in [({"sasl.oauthbearer.token.endpoint.url": "https://issuer.example/token"},
                            "does not log in to an OAuth token endpoint"),
                           ({"sasl.oauthbearer.token.endpoint.url": f"file://{tmp_path}/missing"},
                            "cannot read the OAUTHBEARER token file"),
                           ({"sasl.login.callback.handler.class": "com.example.Handler"}, "loads no classes")]:
        with pytest.raises(ConfigError, match=message):
            ClientSecurity.from_config(parse_config(Role.PRODUCER, {**base, **extra}))
