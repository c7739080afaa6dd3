"""What keeps a record's content, a topic name or a group id from becoming markup or script, and
another site from driving the console's forms.

- Every response carries a strict Content-Security-Policy: scripts, styles, images and fetches only
  from the console itself, no inline script or style, no framing, no plugins. With Jinja2's
  autoescape (every template) this is defence in depth: an escaping mistake still runs nothing.
- A state-changing request (POST) must come from the console's own pages: a browser says where a
  form was posted from (Origin, Sec-Fetch-Site), and one posted from another site is refused.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, MutableMapping
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def same_origin(headers: dict[str, str]) -> bool:
    """False for a request a browser says came from another site; True otherwise (a request
    without the headers, e.g. from curl, is not a browser being misled). Sec-Fetch-Site, where the
    browser sends it, decides; else the Origin must name this host."""
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP response; cross-site POSTs refused (403)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        if scope["method"] not in ("GET", "HEAD"):
            headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
            if not same_origin(headers):
                body = b"refused: this form was posted from another site\n"
                await with_headers({"type": "http.response.start", "status": 403,
                                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                                (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, with_headers)
