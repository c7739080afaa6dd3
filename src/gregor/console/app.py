"""The Starlette application: its routes over the page classes, the static assets and the
security headers.

Pages are rendered on the server (Jinja2, autoescape on for every template); `static/console.js`
adds what a person watching wants: the live parts of a page refreshed in place, and the charts.
Every blocking client call runs in Starlette's thread pool, so a slow cluster never stalls the
event loop. A cluster that cannot be reached is a page that says so and retries; Kafka's errors
(a refused create, a reset of an active group) are shown with Kafka's own text.
"""

from __future__ import annotations

import contextlib
from typing import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gregor.console.group_pages import GroupPages
from gregor.console.rendering import HERE, Renderer
from gregor.console.security import SecurityHeaders
from gregor.console.services import ConsoleServices, ConsoleSettings
from gregor.console.topic_pages import TopicPages


class ClusterPages:
    """The cluster page and what the page script fetches (chart data, the status line)."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.services = renderer.services

    async def cluster(self, request: Request) -> Response:
        return await self.renderer.load(request, "cluster.html", "cluster",
                                        lambda: {"overview": self.services.inspector.overview()})

    async def status(self, request: Request) -> Response:
        """The status line alone, for pages whose other parts do not change by themselves."""
        page = self.renderer.templates.get_template("status.html").render(settings=self.renderer.settings,
                                                                 status=self.services.sampler.status)
        return HTMLResponse(page)

    async def series(self, request: Request) -> Response:
        return JSONResponse(self.services.sampler.snapshot())


def create_app(settings: ConsoleSettings, services: ConsoleServices | None = None) -> Starlette:
    """The console as an ASGI application; it starts its sampler on startup and closes its
    clients on shutdown (services made here are owned by the application)."""
    owned = services is None
    services = services or ConsoleServices(settings)
    renderer = Renderer(services)
    pages, topics, groups = ClusterPages(renderer), TopicPages(renderer), GroupPages(renderer)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        services.start()
        try:
            yield
        finally:
            if owned:
                await run_in_threadpool(services.close)
            else:
                services.sampler.stop()

    routes = [
        Route("/", pages.cluster),
        Route("/topics", topics.topics),
        Route("/topics", topics.create_topic, methods=["POST"]),
        Route("/topics/{name}", topics.topic),
        Route("/topics/{name}/partitions", topics.add_partitions, methods=["POST"]),
        Route("/topics/{name}/delete", topics.delete_topic, methods=["POST"]),
        Route("/topics/{name}/messages", topics.messages),
        Route("/topics/{name}/messages", topics.produce, methods=["POST"]),
        Route("/topics/{name}/messages/{partition:int}/{offset:int}/{part:str}", topics.download),
        Route("/groups", groups.groups),
        Route("/group", groups.group),
        Route("/group/reset", groups.reset, methods=["POST"]),
        Route("/api/series", pages.series),
        Route("/api/status", pages.status),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders),
                  Middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts))]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
