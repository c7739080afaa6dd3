"""Signed JWTs for OAUTHBEARER tests: an RSA and an EC signing key published in a JWKS file, and a
key the set does not hold (a forger's)."""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

ISSUER = "https://issuer.example"
AUDIENCE = "gregor"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _int(value: int, size: int | None = None) -> str:
    return _b64(value.to_bytes(size or (value.bit_length() + 7) // 8, "big"))


@dataclass
class SigningKeys:
    rsa: Any
    ec: Any
    forger: Any  # an RSA key not in the set, published under the RSA key's kid by nobody
    jwks_path: str

    @property
    def jwks_url(self) -> str:
        return f"file://{self.jwks_path}"

    def token(self, subject: str = "erin", alg: str = "RS256", kid: str | None = None, lifetime_s: int = 600,
              forged: bool = False, **claims: Any) -> str:
        now = int(time.time())
        body = {"sub": subject, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + lifetime_s,
                "scope": "produce consume", **claims}
        header = {"alg": alg, "typ": "JWT", "kid": kid or ("rsa-1" if alg.startswith("RS") else "ec-1")}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(body).encode())}".encode()
        if alg == "RS256":
            signature = (self.forger if forged else self.rsa).sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        elif alg == "ES256":
            r, s = decode_dss_signature(self.ec.sign(signing_input, ec.ECDSA(hashes.SHA256())))
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        else:
            raise ValueError(alg)
        return f"{signing_input.decode()}.{_b64(signature)}"


def make_signing_keys(directory: str) -> SigningKeys:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_numbers, ec_numbers = rsa_key.public_key().public_numbers(), ec_key.public_key().public_numbers()
    jwks = {"keys": [
        {"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": _int(rsa_numbers.n), "e": _int(rsa_numbers.e)},
        {"kty": "EC", "kid": "ec-1", "use": "sig", "crv": "P-256", "x": _int(ec_numbers.x, 32),
         "y": _int(ec_numbers.y, 32)},
        {"kty": "oct", "kid": "hmac", "k": _b64(b"not a public key")},  # skipped, as Kafka's resolver skips it
    ]}
    path = os.path.join(directory, "jwks.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(jwks, handle)
    return SigningKeys(rsa_key, ec_key, rsa.generate_private_key(public_exponent=65537, key_size=2048), path)
