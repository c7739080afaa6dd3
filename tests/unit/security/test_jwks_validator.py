"""Signed OAUTHBEARER tokens against a JWKS, as Kafka's OAuthBearerValidatorCallbackHandler
checks them: signature (RS256, ES256), exp with clock skew, issuer, audience, principal claim."""

from __future__ import annotations

import time

import pytest

from gregor.broker.config import BrokerConfig, ConfigError
from gregor.broker.security.jwks_validator import JwksError, JwksValidator, load_jwks, parse_jwks
from gregor.broker.security.sasl_mechanisms import OAuthBearerExchange, SaslFailure
from gregor.protocol.oauthbearer import TokenError, client_message, unsecured_token
from tests.security.signed_tokens import AUDIENCE, ISSUER

HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def _validator(signing_keys, **checks) -> JwksValidator:
    return JwksValidator(tuple(load_jwks(signing_keys.jwks_url)), **{
        "expected_audience": (AUDIENCE,), "expected_issuer": ISSUER, **checks})


def _now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
def test_a_token_signed_by_a_key_of_the_set_is_accepted(signing_keys, alg):
    token = signing_keys.token("erin", alg=alg)
    name, expires_ms = _validator(signing_keys).validate(token, _now_ms())
    assert name == "erin" and expires_ms > _now_ms()


@pytest.mark.parametrize("make, checks, reason", [
    (lambda keys: keys.token(forged=True), {}, "signature is invalid"),
    (lambda keys: keys.token(kid="rsa-2"), {}, "no key of the JWKS matches the JWT"),
    (lambda keys: keys.token(lifetime_s=-60), {}, "has expired"),
    (lambda keys: keys.token(aud="someone-else"), {}, "audience 'someone-else' holds none of the expected gregor"),
    (lambda keys: keys.token(iss="https://evil.example"), {}, "issuer 'https://evil.example' is not the expected"),
    (lambda keys: keys.token(nbf=int(time.time()) + 120), {}, "'nbf' is in the future"),
    (lambda keys: keys.token(exp=None), {}, "has no 'exp' claim"),
    (lambda keys: keys.token(), {"principal_claim": "email"}, "has no 'email' claim"),
    (lambda keys: unsecured_token({"sub": "erin", "exp": time.time() + 60}), {}, "algorithm 'none' is not accepted"),
    (lambda keys: "not.a.jwt!", {}, "not base64url"),
])
def test_what_kafka_refuses_is_refused(signing_keys, make, checks, reason):
    with pytest.raises(TokenError, match=reason):
        _validator(signing_keys, **checks).validate(make(signing_keys), _now_ms())


def test_clock_skew_and_claim_names(signing_keys):
    expired_10s_ago = signing_keys.token(lifetime_s=-10, email="erin@example")
    assert _validator(signing_keys, clock_skew_s=30).validate(expired_10s_ago, _now_ms())[0] == "erin"
    with pytest.raises(TokenError, match="expired"):
        _validator(signing_keys, clock_skew_s=0).validate(expired_10s_ago, _now_ms())
    token = signing_keys.token(email="erin@example")
    assert _validator(signing_keys, principal_claim="email").validate(token, _now_ms())[0] == "erin@example"
    assert _validator(signing_keys, expected_audience=(), expected_issuer=None).validate(
        signing_keys.token(aud="any", iss="any"), _now_ms())[0] == "erin"


def test_a_refused_token_fails_the_sasl_exchange_as_kafka_does(signing_keys):
    exchange = OAuthBearerExchange(_validator(signing_keys), _now_ms)
    assert exchange.respond(client_message(signing_keys.token(lifetime_s=-60))) == b'{"status":"invalid_token"}'
    with pytest.raises(SaslFailure, match="Authentication failed: the JWT has expired"):
        exchange.respond(b"\x01")
    accepted = OAuthBearerExchange(_validator(signing_keys), _now_ms)
    assert accepted.respond(client_message(signing_keys.token("erin", alg="ES256"))) == b""
    assert accepted.principal == "User:erin"


def test_key_sets_that_cannot_be_used(tmp_path):
    with pytest.raises(JwksError, match="no RSA or EC signing key"):
        parse_jwks('{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}')
    with pytest.raises(JwksError, match="not a JSON Web Key Set"):
        parse_jwks("[]")
    with pytest.raises(JwksError, match="file:// URL only"):
        load_jwks("https://issuer.example/jwks")
    with pytest.raises(JwksError, match="No such file"):
        load_jwks(f"file://{tmp_path}/missing.json")


def _listener(**extra) -> dict:
    return {"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "OAUTHBEARER", **extra}


def test_the_broker_validates_a_listener_with_kafka_s_handler(signing_keys):
    config = BrokerConfig(_listener(**{
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER,
        "sasl.oauthbearer.jwks.endpoint.url": signing_keys.jwks_url,
        "sasl.oauthbearer.expected.audience": f"other,{AUDIENCE}", "sasl.oauthbearer.expected.issuer": ISSUER,
        "sasl.oauthbearer.sub.claim.name": "email", "sasl.oauthbearer.clock.skew.seconds": "5"}))
    validator = config.listener_security["SASL_PLAINTEXT"].oauthbearer
    assert isinstance(validator, JwksValidator)
    assert (validator.expected_audience, validator.principal_claim, validator.clock_skew_s) == (
        ("other", AUDIENCE), "email", 5)


@pytest.mark.parametrize("extra, message", [
    ({"sasl.oauthbearer.jwks.endpoint.url": "file:///jwks.json"}, "no listener validates signed OAUTHBEARER tokens"),
    ({"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER},
     "sasl.oauthbearer.jwks.endpoint.url: listener SASL_PLAINTEXT validates signed OAUTHBEARER tokens"),
    ({"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "x.Handler"},
     "Gregor loads no callback handler classes"),
    ({"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": HANDLER,
      "sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json"}, "No such file"),
    ({"sasl.oauthbearer.token.endpoint.url": "https://issuer.example/token"}, "Gregor does not read this key"),
])
def test_oauthbearer_keys_that_cannot_be_honoured(extra, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(_listener(**extra))
