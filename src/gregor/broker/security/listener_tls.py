"""A listener's key and trust stores, reloaded without a restart (Kafka's dynamic SSL configs).

`listener.name.<listener>.ssl.keystore.*` / `ssl.truststore.*` set on this broker's resource with
(Incremental)AlterConfigs are first checked here, before the change is forwarded to the
controller: the new stores must load, and the new certificate must keep the old one's subject and
subject alternative names, as Kafka's SslFactory requires; a change that fails is answered
INVALID_REQUEST with Kafka's message and never reaches the metadata log. Once committed, the
change is applied: new connections are handshaken with the new stores, connections already open
keep theirs. As in Kafka, setting a key to the value it already has reloads the stores when one
of their files has changed since they were loaded; files are not watched otherwise.

The swap happens in the handshake: the listener's original context has a server-name callback
(called for every ClientHello) that moves the connection to the current context, so the network
edge, which was handed that context when the listener was bound, needs no change.
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
from gregor.protocol.tls import TlsConfigError, server_context

if TYPE_CHECKING:
    from gregor.broker.config import BrokerConfig

log = logging.getLogger("gregor.security")

_FAILED = "Validation of dynamic config update of SSLFactory failed: "
State = tuple[tuple[str, object], ...]


class _Reloadable:
    """One TLS listener: the context it was bound with and the one new handshakes use."""

    def __init__(self, base: ssl.SSLContext, state: State, certificate: bytes | None) -> None:
        self.current = base
        self.state = state
        self.certificate = certificate  # what `current` presents (DER), for the next change's check
        base.sni_callback = self._select

    def _select(self, ssl_object: ssl.SSLObject, _server_name: str | None, base: ssl.SSLContext) -> None:
        if self.current is not base:
            ssl_object.context = self.current


@dataclass(frozen=True)
class Refusal:
    """A listener whose new stores cannot be used, and Kafka's message saying why."""

    listener: str
    message: str


class ListenerTls:
    """The TLS listeners of one broker, reloadable from its dynamic broker config; a metadata
    publisher (each committed change of this broker's config is applied)."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self.node_id = config.node_id
        self._listeners: dict[str, _Reloadable] = {}
        self._published = False

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if not self._published or (BROKER_RESOURCE, str(self.node_id)) in delta.changed_configs():
            self._published = True
            self.apply(image.broker_config(self.node_id))

    def track(self, listener: str, transport: ListenerTransport) -> None:
        """Make a bound listener's stores reloadable (a plaintext listener has none)."""
        if transport.ssl_context is not None:
            self._listeners[listener.upper()] = _Reloadable(transport.ssl_context, self._state(listener, {}),
                                                            _presented(self._lookup(listener, {})))

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

    def _build(self, listener: str, dynamic: Mapping[str, str]) -> tuple[ssl.SSLContext, bytes | None]:
        """The listener's context from these dynamic keys and the certificate it presents;
        TlsConfigError saying why it cannot be used."""
        lookup = self._lookup(listener, dynamic)
        context = server_context(lookup)
        certificate = _presented(lookup)
        problem = _incompatibility(self._listeners[listener].certificate, certificate)
        if problem:
            raise TlsConfigError(problem)
        return context, certificate

    def check(self, dynamic: Mapping[str, str]) -> Refusal | None:
        """Whether this broker's dynamic config, as a change would leave it, gives every TLS
        listener whose store keys it names stores that load and match the current certificate."""
        named = {found[0] for key in dynamic if (found := listener_ssl_key(key)) is not None}
        for listener in sorted(named):
            if listener not in self._listeners:
                return Refusal(listener, f"{_FAILED}this broker has no TLS listener {listener}")
            try:
                self._build(listener, dynamic)
            except TlsConfigError as error:
                return Refusal(listener, f"{_FAILED}{error}")
        return None

    def apply(self, dynamic: Mapping[str, str]) -> None:
        """Take up a committed dynamic config: each TLS listener whose stores or their files
        changed gets a new context for new connections (a failure keeps the old one, logged)."""
        for listener, reloadable in self._listeners.items():
            state = self._state(listener, dynamic)
            if state == reloadable.state:
                continue
            reloadable.state = state
            try:
                reloadable.current, reloadable.certificate = self._build(listener, dynamic)
            except TlsConfigError as error:
                log.error("listener %s keeps its key and trust stores: %s%s", listener, _FAILED, error)
                continue
            log.info("listener %s reloaded its key and trust stores; new connections use them", listener)


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
