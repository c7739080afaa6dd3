"""Each listener's security, resolved from Kafka's keys once at start.

A listener's protocol comes from `listener.security.protocol.map`; its keys are the global ones
unless `listener.name.<listener>.<key>` overrides them. What a listener needs is checked here, so
that a broker that cannot honour its configuration refuses to start with one line instead of
serving something weaker: a TLS listener without a key, a SASL listener whose mechanisms Gregor
does not serve (GSSAPI, Kafka's default), PLAIN without its JAAS users, a JWKS for OAUTHBEARER
that a listener would not use (or cannot read), a per-listener key Gregor does not read, or a
listener prefix naming no listener.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.network import Dispatcher, ListenerTransport
from gregor.protocol.jaas import JaasConfig, parse_jaas
from gregor.broker.security.principal_mapping import PrincipalMapper
from gregor.broker.security.sasl_authenticator import SaslAuthenticator, SaslSettings
from gregor.broker.security.sasl_mechanisms import OAUTHBEARER, PLAIN, SUPPORTED_MECHANISMS
from gregor.broker.security.jwks_validator import VALIDATOR_HANDLERS, JwksError, JwksValidator, load_jwks
from gregor.protocol.oauthbearer import TokenValidator, UnsecuredValidator
from gregor.protocol.tls import TlsConfigError, client_context, server_context
from gregor.protocol.scram import ScramCredential

if TYPE_CHECKING:
    from gregor.broker.config import BrokerConfig

log = logging.getLogger("gregor.security")

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})

#: Keys a listener may override with `listener.name.<listener>.<key>`; any other is refused.
LISTENER_KEYS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.certificates", "ssl.client.auth", "ssl.principal.mapping.rules",
    "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites", "ssl.endpoint.identification.algorithm",
    "sasl.enabled.mechanisms", "connections.max.reauth.ms",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
})
_JAAS_KEYS = frozenset(f"{mechanism.lower()}.sasl.jaas.config" for mechanism in SUPPORTED_MECHANISMS)
_OAUTHBEARER_HANDLER = "oauthbearer.sasl.server.callback.handler.class"
#: Kafka's keys for signed OAUTHBEARER tokens that Gregor reads (globally); any other is refused.
OAUTHBEARER_KEYS = frozenset({
    "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.clock.skew.seconds",
})



class SecurityConfigError(ValueError):
    """A listener's security keys cannot be honoured; the message names the key."""


@dataclass(frozen=True)
class ListenerSecurity:
    """What one listener needs at the network edge."""

    listener: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: PrincipalMapper | None = None
    mechanisms: tuple[str, ...] = ()
    jaas: Mapping[str, JaasConfig] = field(default_factory=dict)  # by mechanism
    failure_delay_s: float = 0.1
    oauthbearer: TokenValidator = UnsecuredValidator()
    max_reauth_ms: int = 0

    def transport(self, scram_credential: Callable[[str, str], ScramCredential | None],
                  clock: Clock = wall_clock_ms) -> ListenerTransport:
        """The network edge's view; `scram_credential(user, mechanism)` reads the metadata log,
        `clock` is what OAUTHBEARER token expiry is checked against."""
        authenticate: Callable[[Dispatcher], Dispatcher] | None = None
        if self.protocol in SASL_PROTOCOLS:
            plain = self.jaas.get(PLAIN)
            settings = SaslSettings(self.mechanisms, plain.users() if plain else {}, scram_credential,
                                    self.failure_delay_s, self.oauthbearer, clock, self.max_reauth_ms)

            def authenticate(dispatcher: Dispatcher) -> Dispatcher:
                return SaslAuthenticator(dispatcher, settings)
        mapper = self.principal_mapper
        return ListenerTransport(self.ssl_context, mapper.principal if mapper is not None else None, authenticate)

    def login(self, mechanism: str) -> tuple[str, str]:
        """(username, password) the broker's own connections log in with on this listener, from the
        mechanism's JAAS config, as Kafka's broker does for inter-broker and controller traffic."""
        jaas = self.jaas.get(mechanism)
        key = f"listener.name.{self.listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        if jaas is None or "username" not in jaas.options or "password" not in jaas.options:
            raise SecurityConfigError(f"{key}: the broker's own connections on listener {self.listener} need "
                                      f"username=\"...\" password=\"...\" for {mechanism}")
        return jaas.options["username"], jaas.options["password"]


def _mechanisms(config: BrokerConfig, listener: str) -> tuple[str, ...]:
    raw = config.listener_value(listener, "sasl.enabled.mechanisms")
    names = tuple(str(name).strip().upper() for name in (raw if isinstance(raw, list) else str(raw).split(","))
                  if str(name).strip())
    unsupported = [name for name in names if name not in SUPPORTED_MECHANISMS]
    if unsupported or not names:
        default = " (Kafka's default)" if names == ("GSSAPI",) else ""
        raise SecurityConfigError(
            f"sasl.enabled.mechanisms: listener {listener} enables {', '.join(unsupported) or 'no mechanism'}"
            f"{default}, which Gregor does not serve; set PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and/or OAUTHBEARER "
            f"(globally or as listener.name.{listener.lower()}.sasl.enabled.mechanisms)")
    return names


def _jaas(config: BrokerConfig, listener: str) -> dict[str, JaasConfig]:
    configs = {}
    for mechanism in SUPPORTED_MECHANISMS:
        key = f"{mechanism.lower()}.sasl.jaas.config"
        raw = config.listener_value(listener, key)
        if raw:
            try:
                configs[mechanism] = parse_jaas(str(raw), f"listener.name.{listener.lower()}.{key}")
            except ValueError as error:
                raise SecurityConfigError(str(error)) from None
    return configs


def resolve(config: BrokerConfig, listener: str) -> ListenerSecurity:
    """The security of one listener; SecurityConfigError when it cannot be honoured."""
    protocol = config.security_protocol(listener)
    value = lambda key: config.listener_value(listener, key)  # noqa: E731
    max_reauth_ms = config.listener_value(listener, "connections.max.reauth.ms")
    if not isinstance(max_reauth_ms, int) or max_reauth_ms < 0:
        raise SecurityConfigError(f"connections.max.reauth.ms: must be 0 (no re-authentication) or more, got "
                                  f"{max_reauth_ms}")
    context = None
    mapper = None
    if protocol in TLS_PROTOCOLS:
        try:
            context = server_context(value)
            mapper = PrincipalMapper(str(value("ssl.principal.mapping.rules") or "DEFAULT"))
        except (TlsConfigError, ValueError) as error:
            raise SecurityConfigError(f"listener {listener}: {error}") from None
        if protocol == "SASL_SSL":
            mapper = None  # the SASL exchange gives the principal, as in Kafka
    if protocol not in SASL_PROTOCOLS:
        return ListenerSecurity(listener, protocol, context, mapper)
    mechanisms = _mechanisms(config, listener)
    jaas = _jaas(config, listener)
    if PLAIN in mechanisms and PLAIN not in jaas:
        raise SecurityConfigError(
            f"listener.name.{listener.lower()}.plain.sasl.jaas.config: listener {listener} enables PLAIN and needs "
            f"its users (org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"...\";)")
    delay = config.get("connection.failed.authentication.delay.ms")
    if delay < 0:
        raise SecurityConfigError(f"connection.failed.authentication.delay.ms: must be at least 0, got {delay}")
    validator: TokenValidator = UnsecuredValidator()
    if OAUTHBEARER in mechanisms:
        validator = _oauthbearer_validator(config, listener, jaas)
    return ListenerSecurity(listener, protocol, context, None, mechanisms, jaas, delay / 1000, validator,
                            max_reauth_ms)


def _oauthbearer_validator(config: BrokerConfig, listener: str, jaas: Mapping[str, JaasConfig]) -> TokenValidator:
    """Kafka's choice: signed tokens checked against the JWKS when the listener's server callback
    handler is OAuthBearerValidatorCallbackHandler, else unsecured JWTs."""
    handler_key = f"listener.name.{listener.lower()}.{_OAUTHBEARER_HANDLER}"
    handler = config.listener_value(listener, _OAUTHBEARER_HANDLER)
    url = config.get("sasl.oauthbearer.jwks.endpoint.url")
    if handler:
        if handler not in VALIDATOR_HANDLERS:
            raise SecurityConfigError(f"{handler_key}: Gregor loads no callback handler classes; it serves Kafka's "
                                      f"OAuthBearerValidatorCallbackHandler (signed tokens, JWKS) or, without this "
                                      f"key, unsecured JWTs")
        if not url:
            raise SecurityConfigError(f"sasl.oauthbearer.jwks.endpoint.url: listener {listener} validates signed "
                                      f"OAUTHBEARER tokens ({handler_key}) and needs the key set's file:// URL")
        try:
            keys = load_jwks(str(url))
        except ImportError:
            raise SecurityConfigError("sasl.oauthbearer.jwks.endpoint.url: checking signed tokens needs the "
                                      "cryptography package (pip install 'gregor-streaming[oauthbearer]')") from None
        except JwksError as error:
            raise SecurityConfigError(f"sasl.oauthbearer.jwks.endpoint.url: {error}") from None
        return JwksValidator(tuple(keys), tuple(config.get("sasl.oauthbearer.expected.audience") or ()),
                             config.get("sasl.oauthbearer.expected.issuer"),
                             config.get("sasl.oauthbearer.scope.claim.name"),
                             config.get("sasl.oauthbearer.sub.claim.name"),
                             config.get("sasl.oauthbearer.clock.skew.seconds"))
    try:
        validator = UnsecuredValidator.from_options(jaas[OAUTHBEARER].options if OAUTHBEARER in jaas else {})
    except ValueError as error:
        raise SecurityConfigError(f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config: {error}") from None
    log.warning("listener %s accepts unsigned OAUTHBEARER tokens (unsecured JWTs): anyone can claim any "
                "principal; for development only", listener)
    return validator


def check_listener_prefixes(config: BrokerConfig) -> None:
    """Refuse `listener.name.<listener>.<key>` keys naming no listener or a key Gregor does not read."""
    names = {endpoint.listener.lower() for endpoint in config.listeners} | {
        name.lower() for name in config.controller_listener_names()}
    for key in config.originals:
        if not key.lower().startswith("listener.name."):
            continue
        listener, _, rest = key[len("listener.name."):].partition(".")
        if listener.lower() not in names:
            raise SecurityConfigError(f"{key}: no listener named {listener.upper()} in listeners")
        if rest not in LISTENER_KEYS and rest.lower() not in _JAAS_KEYS and rest.lower() != _OAUTHBEARER_HANDLER:
            raise SecurityConfigError(f"{key}: Gregor does not honour {rest} per listener (it reads "
                                      f"ssl.*, sasl.enabled.mechanisms and <mechanism>.sasl.jaas.config there)")


def resolve_all(config: BrokerConfig) -> dict[str, ListenerSecurity]:
    """Every listener's security, by listener name."""
    check_listener_prefixes(config)
    unread = sorted(key for key in config.originals
                    if key.lower().startswith("sasl.oauthbearer.") and key not in OAUTHBEARER_KEYS)
    if unread:
        raise SecurityConfigError(f"{unread[0]}: Gregor does not read this key (it validates signed OAUTHBEARER "
                                  f"tokens with {', '.join(sorted(OAUTHBEARER_KEYS))})")
    resolved = {endpoint.listener: resolve(config, endpoint.listener) for endpoint in config.listeners}
    if config.get("sasl.oauthbearer.jwks.endpoint.url") and not any(
            isinstance(security.oauthbearer, JwksValidator) for security in resolved.values()):
        raise SecurityConfigError(f"sasl.oauthbearer.jwks.endpoint.url: no listener validates signed OAUTHBEARER "
                                  f"tokens with it (they would be taken unsecured); set listener.name.<listener>."
                                  f"{_OAUTHBEARER_HANDLER}={sorted(VALIDATOR_HANDLERS)[0]}")
    return resolved


class ClientTls:
    """The TLS context of this node's own connections to one listener. `context` is replaced when
    the listener's key or trust store is reloaded (`listener_tls`); a connection reads it when it
    opens, so new connections use the stores as last reloaded and open ones keep theirs."""

    def __init__(self, listener: str, context: ssl.SSLContext) -> None:
        self.listener = listener
        self.context = context


@dataclass(frozen=True)
class OutboundSecurity:
    """How this node's own connections to another node's listener are secured: TLS with the
    listener's trust (and key, for client certificates), SASL with the mechanism and login Kafka's
    keys name (`listener.name.<listener>.<mechanism>.sasl.jaas.config` username and password)."""

    tls: ClientTls | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        """The context a connection opened now uses (None: plaintext)."""
        return None if self.tls is None else self.tls.context


def outbound(config: BrokerConfig, listener: str, mechanism_key: str) -> OutboundSecurity:
    """The client side for `listener` (this node's or, for a broker-only node's controller
    listener, the controllers'); `mechanism_key` is `sasl.mechanism.inter.broker.protocol` or
    `sasl.mechanism.controller.protocol`."""
    protocol = config.security_protocol(listener)
    context = None
    if protocol in TLS_PROTOCOLS:
        try:
            context = ClientTls(listener, client_context(lambda key: config.listener_value(listener, key)))
        except TlsConfigError as error:
            raise SecurityConfigError(f"listener {listener} (this node's own connections): {error}") from None
    if protocol not in SASL_PROTOCOLS:
        return OutboundSecurity(context)
    mechanism = str(config.get(mechanism_key)).upper()
    if mechanism == OAUTHBEARER:
        raise SecurityConfigError(f"{mechanism_key}: OAUTHBEARER is not supported for the broker's own connections; "
                                  f"use PLAIN or SCRAM between nodes")
    if config.listener_value(listener, "connections.max.reauth.ms"):
        raise SecurityConfigError(f"connections.max.reauth.ms: this node's own connections to listener {listener} do "
                                  f"not re-authenticate; set "
                                  f"listener.name.{listener.lower()}.connections.max.reauth.ms=0")
    local = config.listener_security.get(listener)
    enabled = local.mechanisms if local is not None else SUPPORTED_MECHANISMS
    if mechanism not in enabled:
        raise SecurityConfigError(f"{mechanism_key}: {mechanism} is not among listener {listener}'s "
                                  f"mechanisms ({', '.join(enabled)})")
    security = local if local is not None else ListenerSecurity(listener, protocol, jaas=_jaas(config, listener))
    username, password = security.login(mechanism)
    return OutboundSecurity(context, mechanism, username, password)


def peer_security(config: BrokerConfig) -> dict[str, OutboundSecurity]:
    """This node's own connections: to other brokers' inter-broker listener (replication) and to
    the controllers' listener (the first of `controller.listener.names`, as in Kafka). The
    embedded single node makes neither."""
    if config.embedded:
        return {}
    controller = str(config.get("controller.listener.names")[0]).upper()
    routes = {"controller": outbound(config, controller, "sasl.mechanism.controller.protocol")}
    if "broker" in config.process_roles:
        routes["inter_broker"] = outbound(config, config.inter_broker_listener, "sasl.mechanism.inter.broker.protocol")
    return routes
