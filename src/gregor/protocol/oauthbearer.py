"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWTs, as Kafka's development-only unsecured token
handlers make and check them: a token is `base64url(header).base64url(claims).` with
`{"alg":"none"}` and no signature, so anyone can write one. Shared by the broker (validation) and
the client (making one from `unsecuredLoginStringClaim_sub`, ...).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

_SEPARATOR = "\x01"


class TokenError(ValueError):
    """A token or client message that does not validate; the text says why (no secret in it)."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def unsecured_token(claims: Mapping[str, Any]) -> str:
    return f"{_b64url(json.dumps({'alg': 'none'}).encode())}.{_b64url(json.dumps(dict(claims)).encode())}."


def client_message(token: str, authzid: str = "") -> bytes:
    """The client's one message: gs2 header, `auth=Bearer <token>`, no extensions."""
    header = f"n,a={authzid}," if authzid else "n,,"
    return f"{header}{_SEPARATOR}auth=Bearer {token}{_SEPARATOR}{_SEPARATOR}".encode()


def parse_client_message(message: bytes) -> tuple[str, str]:
    """(authorization id, token) of a client message; extensions are accepted and ignored."""
    text = message.decode("utf-8", "replace")
    gs2, sep, rest = text.partition(_SEPARATOR)
    if not sep or not gs2.startswith("n,") or not rest.endswith(_SEPARATOR * 2):
        raise TokenError("Invalid OAUTHBEARER client first message")
    authzid = gs2[2:].rstrip(",")
    authzid = authzid[2:] if authzid.startswith("a=") else authzid
    fields = dict(item.partition("=")[::2] for item in rest[:-2].split(_SEPARATOR) if item)
    auth = fields.get("auth", "")
    if not auth.startswith("Bearer "):
        raise TokenError("Invalid OAUTHBEARER client first message: no auth=Bearer token")
    return authzid, auth[len("Bearer "):].strip()


class TokenValidator(Protocol):
    """How a listener checks OAUTHBEARER tokens: unsecured JWTs here, signed ones against a key set
    on the broker (`gregor.broker.security.jwks_validator`)."""

    def validate(self, token: str, now_ms: int) -> tuple[str, int]:
        """The token's principal name and expiry (epoch ms); TokenError saying why it is refused."""


@dataclass(frozen=True)
class UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler options (from the listener's JAAS)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> UnsecuredValidator:
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "0")
        if not skew.isdigit():
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs: not a number of milliseconds: {skew!r}")
        return cls(options.get("unsecuredValidatorPrincipalClaimName", "sub") or "sub",
                   options.get("unsecuredValidatorScopeClaimName", "scope") or "scope",
                   tuple(options.get("unsecuredValidatorRequiredScope", "").split()), int(skew))

    def validate(self, token: str, now_ms: int) -> tuple[str, int]:
        """The token's principal name and expiry (epoch ms); TokenError when it is malformed,
        signed, expired or short of scope."""
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise TokenError("not an unsecured JWT (header.claims. with an empty signature)")
        try:
            header, claims = (json.loads(_unb64url(part)) for part in parts[:2])
        except (ValueError, UnicodeDecodeError):
            raise TokenError("the JWT header or claims are not base64url JSON") from None
        if not isinstance(header, dict) or header.get("alg") != "none" or not isinstance(claims, dict):
            raise TokenError("the JWT must be unsecured (alg none)")
        name = claims.get(self.principal_claim)
        if not isinstance(name, str) or not name.strip():
            raise TokenError(f"the JWT has no '{self.principal_claim}' claim")
        expires = claims.get("exp")
        if not isinstance(expires, (int, float)) or isinstance(expires, bool):
            raise TokenError("the JWT has no numeric 'exp' claim")
        if expires * 1000 <= now_ms - self.clock_skew_ms:
            raise TokenError("the JWT has expired")
        issued = claims.get("iat")
        if isinstance(issued, (int, float)) and issued * 1000 > now_ms + self.clock_skew_ms:
            raise TokenError("the JWT was issued in the future")
        scope = claims.get(self.scope_claim, [])
        granted = set(scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else [])
        missing = [item for item in self.required_scope if item not in granted]
        if missing:
            raise TokenError(f"the JWT lacks the required scope {' '.join(missing)}")
        return name, int(expires * 1000)
