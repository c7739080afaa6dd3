"""SaslHandshake (key 17), v0–v1 and SaslAuthenticate (key 36), v0–v2, outside an authentication.

On a SASL listener the connection's authenticator (`gregor.broker.security.sasl_authenticator`)
answers both until the connection is authenticated, and again for a re-authentication (KIP-368)
when `connections.max.reauth.ms` allows one. Reaching a handler means the connection is already
authenticated without re-authentication, or its listener has no SASL (PLAINTEXT, SSL): Kafka
answers ILLEGAL_SASL_STATE, and so does Gregor. Both listeners' tables have them, so that ApiVersions on a
SASL controller listener advertises the handshake too.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext
from gregor.broker.security.sasl_authenticator import AUTHENTICATE_VERSIONS, HANDSHAKE_VERSIONS
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
)


def handle_handshake(context: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


def handle_authenticate(context: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"",
                                    error_message="Unexpected SaslAuthenticate request: the connection is "
                                                  "authenticated or its listener has no SASL")


HANDLERS = [Handler(SaslHandshakeRequest.API_KEY, *HANDSHAKE_VERSIONS, handle_handshake),
            Handler(SaslAuthenticateRequest.API_KEY, *AUTHENTICATE_VERSIONS, handle_authenticate)]
