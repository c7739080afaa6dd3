"""A node's key and trust stores, reloaded without a restart (Kafka's dynamic SSL configs).

`listener.name.<listener>.ssl.keystore.*` / `ssl.truststore.*` set on this node's broker resource
with (Incremental)AlterConfigs are first checked here, before the change is committed to the
metadata log: the new stores must load, and the new certificate must keep the old one's subject
and subject alternative names, as Kafka's SslFactory requires; a change that fails is answered
INVALID_REQUEST with Kafka's message and never reaches the metadata log. Once committed, the
change is applied: new connections are handshaken with the new stores, connections already open
keep theirs. As in Kafka, setting a key to the value it already has reloads the stores when one
of their files has changed since they were loaded; files are not watched otherwise.

What a listener's stores serve, each reloaded the same way:
- the TLS listeners this node serves: a broker's client listeners and a controller's controller
  listener (one ListenerTls covers both on a combined node). The swap happens in the handshake:
  the listener's original context has a server-name callback (called for every ClientHello) that
  moves the connection to the current context, so the network edge, which was handed that context
  when the listener was bound, needs no change;
- this node's own connections to that listener on other nodes (Kafka's client channel builders of
  the replica fetchers, transaction markers and the channel to the controller, which are
  reconfigured with the listener): the `ClientTls` of `config.peer_security` gets a new client
  context, which the next connection opened to a peer reads.
"""

from __future__ import annotations

import logging
import os
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from gregor.broker.network import ListenerTransport
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import BROKER_RESOURCE, MetadataImage
from gregor.metadata.listener_configs import RECONFIGURABLE_SSL_KEYS, listener_ssl_key
from gregor.protocol.tls import TlsConfigError, client_context, server_context

if TYPE_CHECKING:
    from gregor.broker.config import BrokerConfig
    from gregor.broker.security.listener_security import ClientTls

log = logging.getLogger("gregor.security")

_FAILED = "Validation of dynamic config update of SSLFactory failed: "
State = tuple[tuple[str, object], ...]


class _Reloadable:
    """One listener's stores: the TLS listener served with them (None when this node only connects
    to it), the client contexts of this node's own connections to it, and what they were loaded from."""

    def __init__(self, state: State, certificate: bytes | None) -> None:
        self.server: ssl.SSLContext | None = None  # the context the listener was bound with
        self.current: ssl.SSLContext | None = None  # the one new handshakes use
        self.clients: list[ClientTls] = []
        self.state = state
        self.certificate = certificate  # what the stores present (DER), for the next change's check

    def serve(self, base: ssl.SSLContext) -> None:
        self.server = self.current = base
        base.sni_callback = self._select

    def _select(self, ssl_object: ssl.SSLObject, _server_name: str | None, base: ssl.SSLContext) -> None:
        if self.current is not base and self.current is not None:
            ssl_object.context = self.current


@dataclass(frozen=True)
class Refusal:
    """A listener whose new stores cannot be used, and Kafka's message saying why."""

    listener: str
    message: str


@dataclass(frozen=True)
class _Contexts:
    server: ssl.SSLContext | None
    client: ssl.SSLContext | None
    certificate: bytes | None


class ListenerTls:
    """The TLS stores of one node, reloadable from its dynamic broker config; a metadata publisher
    (each committed change of this node's config is applied)."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self.node_id = config.node_id
        self._listeners: dict[str, _Reloadable] = {}
        self._published = False
        for security in config.peer_security.values():
            if security.tls is not None:
                self._reloadable(security.tls.listener).clients.append(security.tls)

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if not self._published or (BROKER_RESOURCE, str(self.node_id)) in delta.changed_configs():
            self._published = True
            self.apply(image.broker_config(self.node_id))

    def track(self, listener: str, transport: ListenerTransport) -> None:
        """Make a bound listener's stores reloadable (a plaintext listener has none)."""
        if transport.ssl_context is not None:
            self._reloadable(listener).serve(transport.ssl_context)

    def _reloadable(self, listener: str) -> _Reloadable:
        name = listener.upper()
        if name not in self._listeners:
            self._listeners[name] = _Reloadable(self._state(name, {}), _presented(self._lookup(name, {})))
        return self._listeners[name]

    def _lookup(self, listener: str, dynamic: Mapping[str, str]) -> Callable[[str], object]:
        prefix = f"listener.name.{listener.lower()}."

        def value(key: str) -> object:
            changed = dynamic.get(prefix + key)
            return changed if changed is not None else self._config.listener_value(listener, key)
        return value

    def _state(self, listener: str, dynamic: Mapping[str, str]) -> State:
        """The store keys and the modification times of their files: a change of either reloads."""
        value = self._lookup(listener, dynamic)
        state: list[tuple[str, object]] = [(key, value(key)) for key in sorted(RECONFIGURABLE_SSL_KEYS)]
        for key in ("ssl.keystore.location", "ssl.truststore.location"):
            path = value(key)
            try:
                state.append((key + "#mtime", os.stat(str(path)).st_mtime_ns if path else None))
            except OSError:
                state.append((key + "#mtime", None))
        return tuple(state)

    def _build(self, listener: str, dynamic: Mapping[str, str]) -> _Contexts:
        """The listener's contexts from these dynamic keys (server side if this node serves it,
        client side if it connects to it) and the certificate they present; TlsConfigError saying
        why they cannot be used."""
        reloadable = self._listeners[listener]
        lookup = self._lookup(listener, dynamic)
        server = server_context(lookup) if reloadable.server is not None else None
        client = client_context(lookup) if reloadable.clients else None
        certificate = _presented(lookup)
        problem = _incompatibility(reloadable.certificate, certificate)
        if problem:
            raise TlsConfigError(problem)
        return _Contexts(server, client, certificate)

    def check(self, dynamic: Mapping[str, str]) -> Refusal | None:
        """Whether this node's dynamic config, as a change would leave it, gives every TLS
        listener whose store keys it names stores that load and match the current certificate."""
        named = {found[0] for key in dynamic if (found := listener_ssl_key(key)) is not None}
        for listener in sorted(named):
            if listener not in self._listeners:
                return Refusal(listener, f"{_FAILED}this node has no TLS listener {listener}, nor connections to one")
            try:
                self._build(listener, dynamic)
            except TlsConfigError as error:
                return Refusal(listener, f"{_FAILED}{error}")
        return None

    def apply(self, dynamic: Mapping[str, str]) -> None:
        """Take up a committed dynamic config: each TLS listener whose stores or their files
        changed gets new contexts for new connections (a failure keeps the old ones, logged)."""
        for listener, reloadable in self._listeners.items():
            state = self._state(listener, dynamic)
            if state == reloadable.state:
                continue
            reloadable.state = state
            try:
                contexts = self._build(listener, dynamic)
            except TlsConfigError as error:
                log.error("listener %s keeps its key and trust stores: %s%s", listener, _FAILED, error)
                continue
            reloadable.certificate = contexts.certificate
            if contexts.server is not None:
                reloadable.current = contexts.server
            for client in reloadable.clients:
                if contexts.client is not None:
                    client.context = contexts.client
            log.info("listener %s reloaded its key and trust stores; new connections%s use them", listener,
                     " to it from this node" if reloadable.server is None else "")


def _presented(lookup: Callable[[str], object]) -> bytes | None:
    """The certificate (DER) a listener with these keys presents, from a handshake in memory with
    a context of the same key store that asks no client certificate."""
    try:
        context = server_context(lambda key: "none" if key == "ssl.client.auth" else lookup(key))
    except TlsConfigError:
        return None
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    pipes = [ssl.MemoryBIO() for _ in range(4)]
    ours = client.wrap_bio(pipes[0], pipes[1])
    theirs = context.wrap_bio(pipes[2], pipes[3], server_side=True)
    for _ in range(4):
        for side in (ours, theirs):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError:
                break
        pipes[2].write(pipes[1].read())
        pipes[0].write(pipes[3].read())
        certificate = ours.getpeercert(binary_form=True) if ours.version() else None
        if certificate:
            return certificate
    return None


def _incompatibility(before: bytes | None, after: bytes | None) -> str | None:
    """Kafka's check of a new keystore: the same subject and subject alternative names."""
    try:
        from cryptography import x509
    except ImportError:  # the check needs the optional cryptography package; without it, none
        return None
    if before is None or after is None:
        return None if before == after else "the new keystore presents no certificate"
    old_cert, new_cert = x509.load_der_x509_certificate(before), x509.load_der_x509_certificate(after)
    if old_cert.subject != new_cert.subject:
        return (f"Keystore DistinguishedName does not match: existing={{{old_cert.subject.rfc4514_string()}}}, "
                f"new={{{new_cert.subject.rfc4514_string()}}}")
    names = [_alt_names(certificate) for certificate in (old_cert, new_cert)]
    if names[0] != names[1]:
        return f"Keystore SubjectAltNames do not match: existing={names[0]}, new={names[1]}"
    return None


def _alt_names(certificate: Any) -> list[str]:
    from cryptography import x509
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return sorted(str(name.value) for name in extension.value)
