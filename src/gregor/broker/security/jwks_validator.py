"""Signed OAUTHBEARER tokens checked against a JSON Web Key Set, as Kafka's
OAuthBearerValidatorCallbackHandler (its BrokerJwtValidator) checks them.

A token is a JWS in compact form, `base64url(header).base64url(claims).base64url(signature)`,
signed with RS256/384/512, PS256/384/512 or ES256/384/512 (`alg: none` is refused) by a key of
the set named by the header's `kid` (any key of the algorithm's type when the token names none).
Then, with `sasl.oauthbearer.clock.skew.seconds` of tolerance: `exp` is required and in the
future, `nbf` and `iat` (when present) not in the future; `iss` equals
`sasl.oauthbearer.expected.issuer` and `aud` holds one of `sasl.oauthbearer.expected.audience`
when they are set; the principal is the `sasl.oauthbearer.sub.claim.name` claim. The set is read
from a `file://` URL once, when the broker starts (Kafka reads a file-based set once too).
Signatures are checked with the `cryptography` package (the `oauthbearer` extra).
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

from gregor.protocol.oauthbearer import TokenError

#: Kafka's server callback handler that validates signed tokens (3.4+, and its 3.1–3.3 name).
VALIDATOR_HANDLERS = frozenset({
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
})

_RSA = {"RS256": "SHA256", "RS384": "SHA384", "RS512": "SHA512"}
_PSS = {"PS256": "SHA256", "PS384": "SHA384", "PS512": "SHA512"}
_EC = {"ES256": ("SHA256", "P-256", 32), "ES384": ("SHA384", "P-384", 48), "ES512": ("SHA512", "P-521", 66)}


class JwksError(ValueError):
    """The key set cannot be read or holds no usable key; the message says why."""


def _unb64url(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise TokenError("the JWT is not base64url") from None


def _integer(jwk: Mapping[str, Any], name: str) -> int:
    value = jwk.get(name)
    if not isinstance(value, str):
        raise JwksError(f"key {jwk.get('kid')!r} has no {name!r}")
    return int.from_bytes(_unb64url(value), "big")


@dataclass(frozen=True)
class _Key:
    kid: str | None
    kty: str  # RSA or EC
    crv: str | None
    public_key: Any  # a cryptography public key


def parse_jwks(text: str) -> list[_Key]:
    """The signing keys of a JWKS document (RFC 7517); keys of other types or uses are skipped,
    as Kafka's resolver skips them. JwksError when none is left."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    curves = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}
    try:
        document = json.loads(text)
    except ValueError as error:
        raise JwksError(f"not JSON: {error}") from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise JwksError("not a JSON Web Key Set (no \"keys\" list)")
    keys = []
    for jwk in entries:
        if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
            continue
        kid = jwk.get("kid") if isinstance(jwk.get("kid"), str) else None
        try:
            if jwk.get("kty") == "RSA":
                keys.append(_Key(kid, "RSA", None, rsa.RSAPublicNumbers(_integer(jwk, "e"), _integer(jwk, "n")).public_key()))
            elif jwk.get("kty") == "EC" and jwk.get("crv") in curves:
                numbers = ec.EllipticCurvePublicNumbers(_integer(jwk, "x"), _integer(jwk, "y"), curves[jwk["crv"]])
                keys.append(_Key(kid, "EC", jwk["crv"], numbers.public_key()))
        except (TokenError, ValueError) as error:
            raise JwksError(f"key {kid!r}: {error}") from None
    if not keys:
        raise JwksError("no RSA or EC signing key in the set")
    return keys


def load_jwks(url: str) -> list[_Key]:
    """The keys at a `file://` URL (JwksError for another scheme, or a file that cannot be read)."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme != "file":
        raise JwksError(f"{url}: Gregor reads a key set from a file:// URL only")
    try:
        with open(urllib.request.url2pathname(parsed.path), encoding="utf-8") as handle:
            return parse_jwks(handle.read())
    except OSError as error:
        raise JwksError(f"{url}: {error.strerror or error}") from None


def _verify(key: _Key, alg: str, signing_input: bytes, signature: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    try:
        if alg in _RSA:
            key.public_key.verify(signature, signing_input, padding.PKCS1v15(), getattr(hashes, _RSA[alg])())
        elif alg in _PSS:
            digest = getattr(hashes, _PSS[alg])()
            key.public_key.verify(signature, signing_input, padding.PSS(padding.MGF1(digest), digest.digest_size),
                                  digest)
        else:
            digest_name, _, size = _EC[alg]
            if len(signature) != 2 * size:
                return False
            der = encode_dss_signature(int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big"))
            key.public_key.verify(der, signing_input, ec.ECDSA(getattr(hashes, digest_name)()))
    except InvalidSignature:
        return False
    return True


def _fits(key: _Key, alg: str) -> bool:
    if alg in _EC:
        return key.kty == "EC" and key.crv == _EC[alg][1]
    return key.kty == "RSA"


def _numeric(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TokenError(f"the JWT's '{name}' claim is not a number")
    return float(value)


@dataclass(frozen=True)
class JwksValidator:
    """The `sasl.oauthbearer.*` checks of one broker; `validate` has UnsecuredValidator's contract."""

    keys: tuple[_Key, ...]
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    scope_claim: str = "scope"
    principal_claim: str = "sub"
    clock_skew_s: int = 30

    def validate(self, token: str, now_ms: int) -> tuple[str, int]:
        """The token's principal name and expiry (epoch ms); TokenError saying what failed."""
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenError("the JWT is not a signed JWS (header.claims.signature)")
        try:
            header, claims = (json.loads(_unb64url(part)) for part in parts[:2])
        except (ValueError, UnicodeDecodeError):
            raise TokenError("the JWT header or claims are not base64url JSON") from None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise TokenError("the JWT header or claims are not JSON objects")
        self._check_signature(header, f"{parts[0]}.{parts[1]}".encode(), _unb64url(parts[2]))
        return self._check_claims(claims, now_ms / 1000)

    def _check_signature(self, header: Mapping[str, Any], signing_input: bytes, signature: bytes) -> None:
        alg = str(header.get("alg"))
        if alg not in _RSA and alg not in _PSS and alg not in _EC:
            raise TokenError(f"the JWT's algorithm {alg!r} is not accepted (RS256/384/512, PS256/384/512, "
                             f"ES256/384/512)")
        kid = header.get("kid")
        candidates = [key for key in self.keys if _fits(key, alg) and (kid is None or key.kid == kid)]
        if not candidates:
            raise TokenError(f"no key of the JWKS matches the JWT (kid {kid!r}, alg {alg})")
        if not any(_verify(key, alg, signing_input, signature) for key in candidates):
            raise TokenError("the JWT's signature is invalid")

    def _check_claims(self, claims: Mapping[str, Any], now_s: float) -> tuple[str, int]:
        skew = self.clock_skew_s
        expires = _numeric(claims, "exp")
        if expires is None:
            raise TokenError("the JWT has no 'exp' claim")
        if expires <= now_s - skew:
            raise TokenError("the JWT has expired")
        for claim in ("nbf", "iat"):
            moment = _numeric(claims, claim)
            if moment is not None and moment > now_s + skew:
                raise TokenError(f"the JWT's '{claim}' is in the future")
        if self.expected_issuer is not None and claims.get("iss") != self.expected_issuer:
            raise TokenError(f"the JWT's issuer {claims.get('iss')!r} is not the expected {self.expected_issuer!r}")
        if self.expected_audience:
            audience = claims.get("aud")
            granted = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
            if not set(granted) & set(self.expected_audience):
                raise TokenError(f"the JWT's audience {audience!r} holds none of the expected "
                                 f"{', '.join(self.expected_audience)}")
        scope = claims.get(self.scope_claim)
        if scope is not None and not isinstance(scope, (str, list)):
            raise TokenError(f"the JWT's '{self.scope_claim}' claim is neither a string nor a list")
        name = claims.get(self.principal_claim)
        if not isinstance(name, str) or not name.strip():
            raise TokenError(f"the JWT has no '{self.principal_claim}' claim")
        return name, int(expires * 1000)
