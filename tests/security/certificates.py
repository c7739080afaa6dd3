"""Test certificates made with the `openssl` command line once per test session: a CA, a broker
certificate for localhost/127.0.0.1, client certificates signed by it, and a second CA with a
client certificate of its own (a client the broker must not trust)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _key_and_request(directory: str, name: str, subject: str) -> None:
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=directory)


def _ca(directory: str, name: str, subject: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", subject, cwd=directory)


def _sign(directory: str, name: str, ca: str, extensions: str | None = None) -> None:
    args = ["x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2"]
    if extensions:
        with open(os.path.join(directory, f"{name}.ext"), "w") as handle:
            handle.write(extensions)
        args += ["-extfile", f"{name}.ext"]
    _openssl(*args, cwd=directory)
    with open(os.path.join(directory, f"{name}-keystore.pem"), "wb") as out:  # Kafka's PEM keystore: key + chain
        for part in (f"{name}.key", f"{name}.pem"):
            with open(os.path.join(directory, part), "rb") as handle:
                out.write(handle.read())


@dataclass(frozen=True)
class Certificates:
    directory: str

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @property
    def ca(self) -> str:
        return self.path("ca.pem")

    def keystore(self, name: str) -> str:
        return self.path(f"{name}-keystore.pem")

    def cert(self, name: str) -> str:
        return self.path(f"{name}.pem")

    def key(self, name: str) -> str:
        return self.path(f"{name}.key")

    def issue(self, name: str, subject: str, alt_names: str | None = None, ca: str = "ca") -> str:
        """A new key and certificate signed by the test CA (or `rogue-ca`); the path of its PEM keystore."""
        _key_and_request(self.directory, name, subject)
        _sign(self.directory, name, ca, f"subjectAltName={alt_names}\n" if alt_names else None)
        return self.keystore(name)


def make_certificates(directory: str) -> Certificates:
    _ca(directory, "ca", "/CN=Gregor Test CA")
    _key_and_request(directory, "broker", "/CN=localhost")
    _sign(directory, "broker", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _key_and_request(directory, "alice", "/O=example/OU=eng/CN=alice")
    _sign(directory, "alice", "ca")
    _ca(directory, "rogue-ca", "/CN=Another CA")
    _key_and_request(directory, "mallory", "/CN=mallory")
    _sign(directory, "mallory", "rogue-ca")
    return Certificates(directory)
