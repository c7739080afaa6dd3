"""`gregor cluster start --secure`: the local cluster with every link on SASL_SSL.

Made once under DIR/tls/ (kept across restarts): a CA, one certificate per node (its name as CN,
localhost and 127.0.0.1 as subject alternative names) and DIR/tls/secrets.properties (random
passwords, mode 0600). The wiring, as a Kafka cluster would be secured:

- the controller listener is SASL_SSL with PLAIN (users in its JAAS config): KRaft cannot use SCRAM
  there, since SCRAM credentials live in the metadata log the controllers serve (KIP-900);
- the brokers' listener, for clients and between brokers, is SASL_SSL with SCRAM-SHA-512 for the
  `client` and `broker` users, and PLAIN for `admin`, the tool's own login: the first SCRAM
  credentials have to be created by someone, and without `gregor storage format --add-scram`
  the tool does it over that PLAIN login once the brokers are up (followers fetch as `broker` from
  then on; until then they retry with backoff).

Then DIR/client.properties (Java's keys: Gregor's client and `--command-config` of the tools) and
DIR/librdkafka.properties (librdkafka's keys: confluent-kafka, kcat -F) hold the `client` login.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from typing import Mapping

from gregor.cli.common import ToolError

TLS_DIR = "tls"
SCRAM = "SCRAM-SHA-512"
BROKER_LISTENER = "SASL_SSL"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule required"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required"
_USERS = ("controller", "admin", "broker", "client")
_VALID_DAYS = 365


@dataclass(frozen=True)
class SecureCluster:
    """Where the cluster's TLS material and passwords are, and the keys and configs they make."""

    root: str
    passwords: Mapping[str, str]

    @property
    def ca(self) -> str:
        return os.path.join(self.root, TLS_DIR, "ca.pem")

    def keystore(self, node_name: str) -> str:
        return os.path.join(self.root, TLS_DIR, f"{node_name}-keystore.pem")

    def node_keys(self, node_name: str, role: str) -> dict[str, str]:
        """What a node's server.properties needs on top of its wiring."""
        controller_jaas = (f'{_PLAIN_MODULE} username="controller" password="{self.passwords["controller"]}" '
                           f'user_controller="{self.passwords["controller"]}";')
        keys = {"listener.security.protocol.map": f"CONTROLLER:SASL_SSL,{BROKER_LISTENER}:SASL_SSL",
                "ssl.keystore.type": "PEM", "ssl.keystore.location": self.keystore(node_name),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca,
                "sasl.mechanism.controller.protocol": "PLAIN",
                "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
                "listener.name.controller.plain.sasl.jaas.config": controller_jaas}
        if role == "broker":
            keys.update({
                "sasl.mechanism.inter.broker.protocol": SCRAM,
                f"listener.name.{BROKER_LISTENER.lower()}.sasl.enabled.mechanisms": f"{SCRAM},PLAIN",
                f"listener.name.{BROKER_LISTENER.lower()}.plain.sasl.jaas.config":
                    f'{_PLAIN_MODULE} user_admin="{self.passwords["admin"]}";',
                f"listener.name.{BROKER_LISTENER.lower()}.{SCRAM.lower()}.sasl.jaas.config":
                    f'{_SCRAM_MODULE} username="broker" password="{self.passwords["broker"]}";'})
        return keys

    def _java(self, user: str, mechanism: str, bootstrap: str) -> dict[str, str]:
        module = _SCRAM_MODULE if mechanism == SCRAM else _PLAIN_MODULE
        return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
                "sasl.jaas.config": f'{module} username="{user}" password="{self.passwords[user]}";',
                "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca}

    def admin_config(self, bootstrap: str) -> dict[str, str]:
        """The tool's own login (PLAIN as `admin`)."""
        return self._java("admin", "PLAIN", bootstrap)

    def client_config(self, bootstrap: str) -> dict[str, str]:
        """Java's client keys for the `client` user (what DIR/client.properties holds)."""
        return self._java("client", SCRAM, bootstrap)

    def librdkafka_config(self, bootstrap: str) -> dict[str, str]:
        return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanisms": SCRAM,
                "sasl.username": "client", "sasl.password": self.passwords["client"], "ssl.ca.location": self.ca}

    def write_client_files(self, bootstrap: str) -> tuple[str, str]:
        """DIR/client.properties and DIR/librdkafka.properties (mode 0600: they hold a password)."""
        paths = []
        for name, keys in (("client.properties", self.client_config(bootstrap)),
                           ("librdkafka.properties", self.librdkafka_config(bootstrap))):
            path = os.path.join(self.root, name)
            _write_private(path, "".join(f"{key}={value}\n" for key, value in keys.items()))
            paths.append(path)
        return paths[0], paths[1]


def prepare(root: str, node_names: list[str]) -> SecureCluster:
    """The cluster's TLS material and passwords, made the first time and read afterwards."""
    directory = os.path.join(root, TLS_DIR)
    os.makedirs(directory, exist_ok=True)
    secrets_path = os.path.join(directory, "secrets.properties")
    passwords = _read_passwords(secrets_path)
    if passwords is None:
        passwords = {user: secrets.token_urlsafe(18) for user in _USERS}
        _write_private(secrets_path, "".join(f"{user}={password}\n" for user, password in passwords.items()))
    cluster = SecureCluster(root, passwords)
    missing = [name for name in node_names if not os.path.exists(cluster.keystore(name))]
    if missing or not os.path.exists(cluster.ca):
        _issue(cluster, directory, missing if os.path.exists(cluster.ca) else node_names)
    return cluster


def _read_passwords(path: str) -> dict[str, str] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            found = dict(line.rstrip("\n").split("=", 1) for line in handle if "=" in line)
    except OSError:
        return None
    if set(_USERS) - set(found):
        raise ToolError(f"{path} lacks a password for {', '.join(sorted(set(_USERS) - set(found)))}: remove "
                        f"{os.path.dirname(path)} to make new ones")
    return found


def _write_private(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def _issue(cluster: SecureCluster, directory: str, node_names: list[str]) -> None:
    """A CA (unless there is one) and a certificate for each node in `node_names`."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise ToolError("--secure makes its certificates with the cryptography package: "
                        "pip install 'gregor-streaming[pkcs12]'") from None
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key_path = os.path.join(directory, "ca.key")
    if os.path.exists(cluster.ca) and os.path.exists(ca_key_path):
        with open(ca_key_path, "rb") as handle:
            loaded = serialization.load_pem_private_key(handle.read(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ToolError(f"{ca_key_path} is not the EC key --secure made: remove {directory} to make new ones")
        ca_key = loaded
        with open(cluster.ca, "rb") as handle:
            ca_cert = x509.load_pem_x509_certificate(handle.read())
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Gregor local cluster CA")])
        ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                   .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                  critical=True)
                   .sign(ca_key, hashes.SHA256()))
        _write_private(ca_key_path, ca_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()).decode())
        with open(cluster.ca, "wb") as handle:
            handle.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    for name in node_names:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(ca_cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
                .add_extension(x509.SubjectAlternativeName([
                    x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        keystore = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()) + cert.public_bytes(serialization.Encoding.PEM)
        _write_private(cluster.keystore(name), keystore.decode())
