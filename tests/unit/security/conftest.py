from __future__ import annotations

import pytest

from tests.security.certificates import Certificates, make_certificates


@pytest.fixture(scope="session")
def certificates(tmp_path_factory) -> Certificates:
    return make_certificates(str(tmp_path_factory.mktemp("certificates")))
