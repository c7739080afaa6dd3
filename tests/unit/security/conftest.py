from __future__ import annotations

import pytest

from tests.security.certificates import Certificates, make_certificates
from tests.security.signed_tokens import SigningKeys, make_signing_keys


@pytest.fixture(scope="session")
def certificates(tmp_path_factory) -> Certificates:
    return make_certificates(str(tmp_path_factory.mktemp("certificates")))


@pytest.fixture(scope="session")
def signing_keys(tmp_path_factory) -> SigningKeys:
    return make_signing_keys(str(tmp_path_factory.mktemp("jwks")))
