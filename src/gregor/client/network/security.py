"""How the client secures its connections: TLS per `ssl.*` and a SASL login per `sasl.*`.

`ClientSecurity.from_config` builds the TLS context once (the same keys and checks as a broker's,
`gregor.protocol.tls`); `authenticate` drives the SASL login (`gregor.protocol.sasl_login`) on a
fresh connection after ApiVersions. A refused login raises `SaslLoginError` with Kafka's code
(SASL_AUTHENTICATION_FAILED, not retriable, as in Kafka's clients).
"""

from __future__ import annotations

import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

from gregor.client.config import ConfigError
from gregor.protocol.jaas import parse_jaas
from gregor.protocol.oauthbearer import unsecured_token
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.sasl_login import SaslLogin, SaslLoginError
from gregor.protocol.tls import TlsConfigError, client_context

Send = Callable[[Any], Awaitable[Any]]


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""
    token_claims: Mapping[str, Any] | None = None  # OAUTHBEARER: the unsecured JWT's claims but iat/exp
    token_lifetime_s: int = 3600
    token_file: str | None = None  # OAUTHBEARER: a file holding a signed token, read at each login

    def login_secret(self, now_s: float) -> str:
        """The password, or for OAUTHBEARER the token file's current token or a fresh unsecured token."""
        if self.token_file is not None:
            return _read_token(self.token_file)
        if self.token_claims is None:
            return self.password
        return unsecured_token({**self.token_claims, "iat": int(now_s), "exp": int(now_s) + self.token_lifetime_s})

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ClientSecurity:
        """From a parsed client config; ConfigError names the key that cannot be used."""
        protocol = str(config.get("security.protocol") or "PLAINTEXT").upper()
        context = None
        if protocol in ("SSL", "SASL_SSL"):
            try:
                context = client_context(config.get)
            except TlsConfigError as error:
                raise ConfigError(str(error)) from None
        if not protocol.startswith("SASL_"):
            return cls(protocol, context)
        if config["sasl.mechanism"] == "OAUTHBEARER":
            token_file = _token_file(config)
            if token_file is not None:
                return cls(protocol, context, "OAUTHBEARER", token_file=token_file)
            return cls(protocol, context, "OAUTHBEARER", *_unsecured_claims(config.get("sasl.jaas.config")))
        username, password = config.get("sasl.username"), config.get("sasl.password")
        if config.get("sasl.jaas.config"):
            try:
                options = parse_jaas(str(config["sasl.jaas.config"])).options
            except ValueError as error:
                raise ConfigError(str(error)) from None
            username, password = options.get("username", username), options.get("password", password)
        if username is None or password is None:
            raise ConfigError("sasl.jaas.config: the login needs username=\"...\" and password=\"...\"")
        return cls(protocol, context, str(config["sasl.mechanism"]), str(username), str(password))


async def authenticate(security: ClientSecurity, send: Send, where: str) -> int:
    """Log in on a connection whose ApiVersions is done; `send(request)` returns the response.
    The session's lifetime in ms: the broker wants a new login on the connection by then
    (KIP-368), 0 when it does not."""
    if security.mechanism is None:
        return 0
    login = SaslLogin(security.mechanism, security.username, security.login_secret(time.time()), where)
    request: Any = login.first()
    while request is not None:
        request = login.next(await send(request))
    return login.session_lifetime_ms


_LOGIN_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
)


def _token_file(config: Mapping[str, Any]) -> str | None:
    """The file of `sasl.oauthbearer.token.endpoint.url=file://...` (Java's client reads a signed
    token from such a file at each login), None without the key; ConfigError for another scheme,
    a login callback handler other than Kafka's, or a file that cannot be read."""
    handler = config.get("sasl.login.callback.handler.class")
    if handler and handler not in _LOGIN_HANDLERS:
        raise ConfigError(f"sasl.login.callback.handler.class={handler}: Gregor's client loads no classes; it reads "
                          f"the token file of sasl.oauthbearer.token.endpoint.url as {_LOGIN_HANDLERS[0]} does")
    url = config.get("sasl.oauthbearer.token.endpoint.url")
    if not url:
        return None
    parsed = urllib.parse.urlparse(str(url))
    if parsed.scheme != "file":
        raise ConfigError(f"sasl.oauthbearer.token.endpoint.url={url}: Gregor's client reads a token from a file:// "
                          f"URL; it does not log in to an OAuth token endpoint")
    path = urllib.request.url2pathname(parsed.path)
    try:
        _read_token(path)
    except SaslLoginError as error:
        raise ConfigError(f"sasl.oauthbearer.token.endpoint.url: {error}") from None
    return path


def _read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read().strip()
    except OSError as error:
        raise SaslLoginError(ErrorCode.SASL_AUTHENTICATION_FAILED,
                             f"cannot read the OAUTHBEARER token file {path}: {error.strerror or error}") from None
    if not token:
        raise SaslLoginError(ErrorCode.SASL_AUTHENTICATION_FAILED, f"the OAUTHBEARER token file {path} is empty")
    return token


def _unsecured_claims(jaas_text: str | None) -> tuple[str, str, dict[str, Any], int]:
    """(username, password, claims, lifetime) of Kafka's unsecured OAUTHBEARER login options:
    `unsecuredLoginStringClaim_<name>`, `unsecuredLoginNumberClaim_<name>`,
    `unsecuredLoginListClaim_<name>` (its first character separates the items),
    `unsecuredLoginPrincipalClaimName` (default sub), `unsecuredLoginLifetimeSeconds` (3600)."""
    if not jaas_text:
        raise ConfigError("sasl.jaas.config: OAUTHBEARER needs OAuthBearerLoginModule with "
                          "unsecuredLoginStringClaim_sub=\"<principal>\"")
    try:
        options = parse_jaas(str(jaas_text)).options
    except ValueError as error:
        raise ConfigError(str(error)) from None
    claims: dict[str, Any] = {}
    for key, value in options.items():
        kind, _, name = key.partition("Claim_")
        if kind == "unsecuredLoginString" and name:
            claims[name] = value
        elif kind == "unsecuredLoginNumber" and name:
            try:
                claims[name] = float(value) if "." in value else int(value)
            except ValueError:
                raise ConfigError(f"sasl.jaas.config: {key} is not a number: {value!r}") from None
        elif kind == "unsecuredLoginList" and name:
            claims[name] = [item for item in value[1:].split(value[:1])] if value else []
    principal = options.get("unsecuredLoginPrincipalClaimName", "sub")
    if not isinstance(claims.get(principal), str) or not claims[principal]:
        raise ConfigError(f"sasl.jaas.config: OAUTHBEARER needs unsecuredLoginStringClaim_{principal}=\"<principal>\"")
    lifetime = options.get("unsecuredLoginLifetimeSeconds", "3600")
    if not lifetime.isdigit():
        raise ConfigError(f"sasl.jaas.config: unsecuredLoginLifetimeSeconds is not a number: {lifetime!r}")
    return claims[principal], "", claims, int(lifetime)
