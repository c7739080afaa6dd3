"""TLS contexts from Kafka's `ssl.*` keys, for a broker's listener (server side) or a client (the
broker's own connections to other nodes, Gregor's client): the same keys and checks on both sides.

Key material: `ssl.keystore.type=PEM` with `ssl.keystore.location` (a file holding the private key
and its certificate chain) or inline `ssl.keystore.certificate.chain` and `ssl.keystore.key`;
`ssl.keystore.type=PKCS12` with `ssl.keystore.location` and `ssl.keystore.password` (read with the
`cryptography` package). Trust: `ssl.truststore.type` PEM (`ssl.truststore.location` or inline
`ssl.truststore.certificates`) or PKCS12; with none, the system's default CAs. `ssl.key.password`
decrypts an encrypted key. Java's JKS stores cannot be read and are refused with a way out.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from typing import Callable

Lookup = Callable[[str], object]

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigError(ValueError):
    """A TLS key that cannot be honoured; the message names the key and the fix."""


def _text(value: Lookup, key: str) -> str:
    raw = value(key)
    if isinstance(raw, (list, tuple)):
        return ",".join(raw)
    return "" if raw is None else str(raw).strip()


def _protocols(value: Lookup) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    raw = value("ssl.enabled.protocols")
    if isinstance(raw, (list, tuple)):
        names = list(raw)
    else:
        names = [part.strip() for part in str(raw or "").split(",") if part.strip()]
    unknown = [name for name in names if name not in _VERSIONS]
    if unknown or not names:
        raise TlsConfigError(f"ssl.enabled.protocols: Gregor speaks TLSv1.2 and TLSv1.3, not "
                             f"{', '.join(unknown) or 'an empty list'}")
    versions = sorted(_VERSIONS[name] for name in names)
    return versions[0], versions[-1]


def _pkcs12(path: str, password: str, key: str) -> tuple[bytes, bytes, list[bytes]]:
    """(key PEM, certificate PEM, CA certificate PEMs) of a PKCS12 store."""
    try:
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12
    except ImportError:
        raise TlsConfigError(f"{key}: reading a PKCS12 store needs the 'cryptography' package "
                             f"(pip install cryptography), or use PEM files") from None
    try:
        with open(path, "rb") as handle:
            private_key, certificate, extra = pkcs12.load_key_and_certificates(
                handle.read(), password.encode() if password else None)
    except (OSError, ValueError) as error:
        raise TlsConfigError(f"{key}: cannot read PKCS12 store {path}: {error}") from None
    key_pem = b"" if private_key is None else private_key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    cert_pem = b"" if certificate is None else certificate.public_bytes(Encoding.PEM)
    return key_pem, cert_pem, [cert.public_bytes(Encoding.PEM) for cert in extra or ()]


def _load_pem_chain(context: ssl.SSLContext, chain: bytes, key_pem: bytes, password: str | None, key: str) -> None:
    """Load in-memory PEM through a private temporary file (the ssl module reads only files),
    removed as soon as the context holds it."""
    descriptor, path = tempfile.mkstemp(prefix="gregor-key-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(key_pem + b"\n" + chain)
        context.load_cert_chain(path, password=password or None)
    except (ssl.SSLError, OSError) as error:
        raise TlsConfigError(f"{key}: cannot load the key and certificate chain: {error}") from None
    finally:
        os.unlink(path)


def _load_keystore(context: ssl.SSLContext, value: Lookup, required: bool) -> None:
    kind = _text(value, "ssl.keystore.type").upper() or "JKS"
    location = _text(value, "ssl.keystore.location")
    chain = _text(value, "ssl.keystore.certificate.chain")
    inline_key = _text(value, "ssl.keystore.key")
    key_password = _text(value, "ssl.key.password") or None
    if not (location or chain or inline_key):
        if required:
            raise TlsConfigError("ssl.keystore.location: a TLS listener needs its key and certificate "
                                 "(ssl.keystore.type=PEM with ssl.keystore.location, or ssl.keystore.certificate.chain "
                                 "and ssl.keystore.key)")
        return
    if kind == "PEM":
        if chain or inline_key:
            if location:
                raise TlsConfigError("ssl.keystore.location: set either it or ssl.keystore.certificate.chain/"
                                     "ssl.keystore.key, not both")
            if not (chain and inline_key):
                raise TlsConfigError("ssl.keystore.certificate.chain and ssl.keystore.key must be set together")
            _load_pem_chain(context, chain.encode(), inline_key.encode(), key_password, "ssl.keystore.key")
            return
        try:
            context.load_cert_chain(location, password=key_password)
        except (ssl.SSLError, OSError) as error:
            raise TlsConfigError(f"ssl.keystore.location: cannot load key and certificate from {location}: "
                                 f"{error}") from None
    elif kind == "PKCS12":
        if not location:
            raise TlsConfigError("ssl.keystore.location: a PKCS12 keystore is a file")
        key_pem, cert_pem, cas = _pkcs12(location, _text(value, "ssl.keystore.password"), "ssl.keystore.location")
        _load_pem_chain(context, cert_pem + b"".join(cas), key_pem, None, "ssl.keystore.location")
    else:
        raise TlsConfigError(f"ssl.keystore.type: {kind} stores cannot be read by Gregor (JKS is Kafka's "
                             f"default); use ssl.keystore.type=PEM or PKCS12")


def _load_truststore(context: ssl.SSLContext, value: Lookup, purpose: ssl.Purpose) -> None:
    kind = _text(value, "ssl.truststore.type").upper() or "JKS"
    location = _text(value, "ssl.truststore.location")
    inline = _text(value, "ssl.truststore.certificates")
    if not (location or inline):
        context.load_default_certs(purpose)
        return
    try:
        if kind == "PEM":
            if location and inline:
                raise TlsConfigError("ssl.truststore.location: set either it or ssl.truststore.certificates, "
                                     "not both")
            if inline:
                context.load_verify_locations(cadata=inline)
            else:
                context.load_verify_locations(cafile=location)
        elif kind == "PKCS12":
            _, cert_pem, cas = _pkcs12(location, _text(value, "ssl.truststore.password"), "ssl.truststore.location")
            context.load_verify_locations(cadata=(cert_pem + b"".join(cas)).decode())
        else:
            raise TlsConfigError(f"ssl.truststore.type: {kind} stores cannot be read by Gregor (JKS is Kafka's "
                                 f"default); use ssl.truststore.type=PEM or PKCS12")
    except (ssl.SSLError, OSError) as error:
        raise TlsConfigError(f"ssl.truststore.location: cannot load CA certificates: {error}") from None


def _common(context: ssl.SSLContext, value: Lookup) -> None:
    context.minimum_version, context.maximum_version = _protocols(value)
    if _text(value, "ssl.cipher.suites"):
        raise TlsConfigError("ssl.cipher.suites: Java cipher suite names cannot be passed to OpenSSL; leave it "
                             "unset (OpenSSL's secure defaults apply)")


def server_context(value: Lookup) -> ssl.SSLContext:
    """A listener's context: its key and chain, and client certificates per `ssl.client.auth`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _common(context, value)
    auth = _text(value, "ssl.client.auth").lower() or "none"
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth: must be none, requested or required, got {auth}")
    _load_keystore(context, value, required=True)
    context.verify_mode = CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(context, value, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(value: Lookup) -> ssl.SSLContext:
    """The broker's own client context for another node's TLS listener: the listener's truststore
    verifies the peer, its keystore (if any) is this node's client certificate, and the host name
    is checked when `ssl.endpoint.identification.algorithm` is https (Kafka's default)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _common(context, value)
    algorithm = _text(value, "ssl.endpoint.identification.algorithm").lower()
    if algorithm not in ("", "https"):
        raise TlsConfigError(f"ssl.endpoint.identification.algorithm: must be https or empty, got {algorithm}")
    context.check_hostname = algorithm == "https"
    _load_truststore(context, value, ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, value, required=False)
    return context
