"""ApiVersions (key 18), v0–v4: the version ranges this broker honours.

A request for a version newer than v4 gets the v0 answer with UNSUPPORTED_VERSION and the
ApiVersions range, so the client can retry with a version both sides speak (KIP-511).
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext, register_all
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

API_KEY = 18
MIN_VERSION, MAX_VERSION = 0, 4


def _api_key_entries() -> list:
    return [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=h.min_version, max_version=h.max_version)
        for key, h in sorted(register_all().items())
    ]


def handle(context: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=_api_key_entries(), throttle_time_ms=0)


def unsupported_version_response() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=API_KEY, min_version=MIN_VERSION,
                                                 max_version=MAX_VERSION)],
    )


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle, answers_unsupported_version=True,
                    unsupported_version_response=unsupported_version_response)]
