"""What every page shares: the templates, rendering with the status line, and the pages shown
when the cluster cannot answer (not found, unreachable and retried, Kafka's error)."""

from __future__ import annotations

import functools
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol
from urllib.parse import quote, urlencode

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from gregor.client import KafkaException
from gregor.client.errors import ClientErrorCode
from gregor.console import content, forms
from gregor.console.health import PartitionState
from gregor.console.reset import SCENARIOS
from gregor.console.services import ConsoleServices, ConsoleSettings
from gregor.protocol.error_codes import ErrorCode

HERE = Path(__file__).parent
UNREACHABLE = frozenset({ClientErrorCode._ALL_BROKERS_DOWN, ClientErrorCode._TRANSPORT, ClientErrorCode._TIMED_OUT})
NOT_FOUND = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                       ClientErrorCode._UNKNOWN_TOPIC, ClientErrorCode._UNKNOWN_PARTITION})
NOTICES = {
    "created": "Topic created.",
    "deleted": "Topic deleted.",
    "partitions": "Partitions added.",
    "produced": "Record produced.",
    "reset": "Offsets reset.",
}
Context = dict[str, Any]


class _Pages(Protocol):
    renderer: Renderer


FormHandler = Callable[[Any, Request, dict[str, str]], Awaitable[Response]]


def changes_cluster(nav: str) -> Callable[[FormHandler], Callable[[Any, Request], Awaitable[Response]]]:
    """For a page method that changes the cluster: refused in read-only mode, else called with
    the posted form."""
    def wrap(handler: FormHandler) -> Callable[[Any, Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def guarded(pages: _Pages, request: Request) -> Response:
            refused = pages.renderer.refuse_read_only(request, nav)
            if refused:
                return refused
            return await handler(pages, request, forms.parse_form(await request.body()))
        return guarded
    return wrap


def topic_url(name: str, *parts: str) -> str:
    return "/topics/" + "/".join([quote(name, safe="")] + list(parts))


def group_url(group_id: str, action: str = "") -> str:
    return f"/group{action}?" + urlencode({"id": group_id})


def human_size(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def when(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(size=human_size, when=when, show=content.show)
    environment.globals.update(topic_url=topic_url, group_url=group_url, PartitionState=PartitionState,
                               SCENARIOS=SCENARIOS, FORMATS=content.FORMATS)
    return environment


class Renderer:
    """Renders the pages of one console (its services and settings)."""

    def __init__(self, services: ConsoleServices) -> None:
        self.services = services
        self.settings: ConsoleSettings = services.settings
        self.templates = _environment()

    def render(self, request: Request, template: str, nav: str, status_code: int = 200, **context: Any) -> Response:
        notice = NOTICES.get(request.query_params.get("done", ""))
        page = self.templates.get_template(template).render(
            settings=self.settings, status=self.services.sampler.status, nav=nav, notice=notice,
            live=request.method == "GET" and status_code < 400, now_ms=int(time.time() * 1000), **context)
        return HTMLResponse(page, status_code=status_code)

    def failure(self, request: Request, error: KafkaException, nav: str) -> Response:
        """A page whose data could not be read: not found, unreachable (retried), or Kafka's error."""
        code = error.code
        if code in NOT_FOUND:  # looked for again: metadata reaches the brokers a moment after a change
            return self.render(request, "failure.html", nav, 404, title="Not found", error=str(error), retry=True)
        if code in UNREACHABLE:
            self.services.sampler.report(str(error))
            return self.render(request, "failure.html", nav, 503, title="Cannot reach the cluster",
                               error=str(error), retry=True)
        return self.render(request, "failure.html", nav, 502, title="The cluster answered with an error",
                           error=str(error), retry=True)

    async def load(self, request: Request, template: str, nav: str, loader: Callable[[], Context],
                   status_code: int = 200, **extra: Any) -> Response:
        try:
            data = await run_in_threadpool(loader)
        except KafkaException as error:
            return self.failure(request, error, nav)
        return self.render(request, template, nav, status_code, **data, **extra)

    def refuse_read_only(self, request: Request, nav: str) -> Response | None:
        if not self.settings.read_only:
            return None
        return self.render(request, "failure.html", nav, 403, title="Read-only console",
                           error="This console was started with --read-only: it changes nothing in the cluster.",
                           retry=False)
