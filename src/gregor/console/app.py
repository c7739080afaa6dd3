"""The Starlette application: routes, their handlers, the templates and the static assets.

Pages are rendered on the server (Jinja2, autoescape on for every template); `static/console.js`
adds what a person watching wants: the live parts of a page refreshed in place, and the charts.
Every blocking client call runs in Starlette's thread pool, so a slow cluster never stalls the
event loop. A cluster that cannot be reached is a page that says so and retries; Kafka's errors
(a refused create, a reset of an active group) are shown with Kafka's own text.
"""

from __future__ import annotations

import contextlib
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Callable
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gregor.client import KafkaException, TopicPartition
from gregor.client.admin import NewTopic, OffsetSpec
from gregor.client.errors import ClientErrorCode
from gregor.console import content, forms
from gregor.console.forms import FormError
from gregor.console.health import PartitionState
from gregor.console.reset import NEEDS_VALUE, SCENARIOS, plan_reset
from gregor.console.security import SecurityHeaders
from gregor.console.services import ConsoleServices, ConsoleSettings
from gregor.protocol.error_codes import ErrorCode

HERE = Path(__file__).parent
UNREACHABLE = frozenset({ClientErrorCode._ALL_BROKERS_DOWN, ClientErrorCode._TRANSPORT, ClientErrorCode._TIMED_OUT})
NOT_FOUND = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                       ClientErrorCode._UNKNOWN_TOPIC, ClientErrorCode._UNKNOWN_PARTITION})
INACTIVE_STATES = ("Empty", "Dead")
NOTICES = {
    "created": "Topic created.",
    "deleted": "Topic deleted.",
    "partitions": "Partitions added.",
    "produced": "Record produced.",
    "reset": "Offsets reset.",
}
Context = dict[str, Any]


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


class Pages:
    """The route handlers, over one set of services."""

    def __init__(self, services: ConsoleServices) -> None:
        self.services = services
        self.settings: ConsoleSettings = services.settings
        self.templates = _environment()

    # rendering

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

    # cluster

    async def cluster(self, request: Request) -> Response:
        return await self.load(request, "cluster.html", "cluster",
                               lambda: {"overview": self.services.inspector.overview()})

    # topics

    async def topics(self, request: Request, error: str | None = None, form: dict[str, str] | None = None,
                     status_code: int = 200) -> Response:
        def loader() -> Context:
            summaries = self.services.inspector.topics()
            rates = {summary.name: self.services.sampler.topic_rate(summary.name) for summary in summaries}
            return {"topics": summaries, "rates": rates}
        return await self.load(request, "topics.html", "topics", loader, status_code, error=error,
                               form=form or {}, deleted=request.query_params.get("topic"))

    async def create_topic(self, request: Request) -> Response:
        refused = self.refuse_read_only(request, "topics")
        if refused:
            return refused
        form = forms.parse_form(await request.body())
        name = form.get("name", "").strip()
        try:
            partitions = forms.optional_int(form.get("partitions"), "partitions", 1)
            replication = forms.optional_int(form.get("replication_factor"), "replication factor", 1)
            configs = forms.properties(form.get("configs", ""), "configs")
        except FormError as error:
            return await self.topics(request, str(error), form, 400)
        new = NewTopic(name, partitions if partitions is not None else -1,
                       replication if replication is not None else -1, config=configs)
        try:
            result = (await run_in_threadpool(self.services.admin.create_topics, [new]))[name]
        except KafkaException as error:
            return self.failure(request, error, "topics")
        if isinstance(result, KafkaException):
            return await self.topics(request, f"Kafka refused to create topic {name!r}: {result}", form, 400)
        await run_in_threadpool(self.services.inspector.await_topic, name, self.settings.timeout_s)
        return RedirectResponse(topic_url(name) + "?done=created", 303)

    async def topic(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        name = request.path_params["name"]
        return await self.load(request, "topic.html", "topics",
                               lambda: {"topic": self.services.inspector.topic(name),
                                        "rate": self.services.sampler.topic_rate(name)},
                               status_code, error=error)

    async def add_partitions(self, request: Request) -> Response:
        refused = self.refuse_read_only(request, "topics")
        if refused:
            return refused
        name = request.path_params["name"]
        form = forms.parse_form(await request.body())
        try:
            total = forms.required_int(form.get("total"), "new total of partitions", 1)
        except FormError as error:
            return await self.topic(request, str(error), 400)
        try:
            result = (await run_in_threadpool(self.services.admin.create_partitions, {name: total}))[name]
        except KafkaException as error:
            return self.failure(request, error, "topics")
        if result is not None:
            return await self.topic(request, f"Kafka refused to add partitions: {result}", 400)
        return RedirectResponse(topic_url(name) + "?done=partitions", 303)

    async def delete_topic(self, request: Request) -> Response:
        refused = self.refuse_read_only(request, "topics")
        if refused:
            return refused
        name = request.path_params["name"]
        form = forms.parse_form(await request.body())
        if form.get("confirm", "") != name:
            return await self.topic(request, "Not deleted: type the topic's name exactly to confirm.", 400)
        try:
            result = (await run_in_threadpool(self.services.admin.delete_topics, [name]))[name]
        except KafkaException as error:
            return self.failure(request, error, "topics")
        if result is not None:
            return await self.topic(request, f"Kafka refused to delete the topic: {result}", 400)
        return RedirectResponse("/topics?" + urlencode({"done": "deleted", "topic": name}), 303)

    # messages

    async def messages(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        name = request.path_params["name"]
        params = request.query_params
        fmt = params.get("format", "auto")
        try:
            partition = forms.optional_int(params.get("partition"), "partition", 0) or 0
            offset = forms.optional_int(params.get("offset"), "offset", 0)
            timestamp = forms.timestamp_ms(params.get("timestamp"), "timestamp")
            limit = forms.optional_int(params.get("limit"), "limit", 1) or 20
            if fmt not in content.FORMATS:
                raise FormError(f"format must be one of {', '.join(content.FORMATS)}")
        except FormError as bad:
            partition, offset, timestamp, limit, fmt = 0, None, None, 20, "auto"
            error, status_code = str(bad), 400

        def loader() -> Context:
            description = self.services.admin.describe_topics([name])[name]
            if isinstance(description, KafkaException):
                raise description
            page = None
            if any(p.partition == partition for p in description.partitions):
                page = self.services.reader.read(name, partition, offset, timestamp, limit)
            return {"partitions": [p.partition for p in description.partitions], "page": page}
        return await self.load(request, "messages.html", "topics", loader, status_code, topic=name,
                               partition=partition, offset=offset, timestamp=params.get("timestamp", ""),
                               limit=limit, format=fmt, limit_bytes=self.settings.value_limit, error=error,
                               produced=forms.optional_int(params.get("produced"), "offset") if not error else None)

    async def download(self, request: Request) -> Response:
        name, part = request.path_params["name"], request.path_params["part"]
        partition, offset = request.path_params["partition"], request.path_params["offset"]
        if part not in ("key", "value"):
            return Response("download key or value\n", 404, media_type="text/plain")
        try:
            record = await run_in_threadpool(self.services.reader.one, name, partition, offset)
        except KafkaException as error:
            return self.failure(request, error, "topics")
        if record is None:
            return Response(f"no record at offset {offset} of {name}-{partition}\n", 404, media_type="text/plain")
        data = record.key if part == "key" else record.value
        filename = f"{name}-{partition}-{offset}.{part}.bin"
        return Response(data or b"", media_type="application/octet-stream",
                        headers={"content-disposition": f'attachment; filename="{filename}"'})

    async def produce(self, request: Request) -> Response:
        refused = self.refuse_read_only(request, "topics")
        if refused:
            return refused
        name = request.path_params["name"]
        form = forms.parse_form(await request.body())
        try:
            partition = forms.optional_int(form.get("partition"), "partition", 0)
            record_headers = forms.headers(form.get("headers", ""))
        except FormError as error:
            return await self.messages(request, str(error), 400)
        key = form.get("key", "")
        value = form.get("value", "")
        try:
            metadata = await run_in_threadpool(
                self.services.producer.send, name, key.encode() if key else None,
                value.encode() if form.get("null_value") != "on" else None, record_headers, partition)
        except KafkaException as error:
            if error.code in UNREACHABLE:
                return self.failure(request, error, "topics")
            return await self.messages(request, f"Kafka refused the record: {error}", 400)
        return RedirectResponse(topic_url(name, "messages") + "?" + urlencode(
            {"partition": metadata.partition, "offset": metadata.offset, "produced": metadata.offset,
             "done": "produced"}), 303)

    # consumer groups

    async def groups(self, request: Request) -> Response:
        return await self.load(request, "groups.html", "groups",
                               lambda: {"groups": self.services.inspector.groups()})

    async def group(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        group_id = request.query_params.get("id", "")
        return await self.load(request, "group.html", "groups",
                               lambda: {"group": self.services.inspector.group(group_id)},
                               status_code, error=error, group_id=group_id)

    async def reset(self, request: Request) -> Response:
        """A reset shows its plan first (as --dry-run); the plan shown is what a confirmation commits."""
        refused = self.refuse_read_only(request, "groups")
        if refused:
            return refused
        group_id = request.query_params.get("id", "")
        form = forms.parse_form(await request.body())
        if form.get("confirm") == "yes":
            return await self._execute_reset(request, group_id, form)
        scenario = form.get("scenario", "")
        try:
            if scenario not in SCENARIOS:
                raise FormError("choose how to reset the offsets")
            if scenario == "to-datetime":
                value = forms.timestamp_ms(form.get("value"), "time")
            else:
                value = forms.optional_int(form.get("value"), "offset" if scenario == "to-offset" else "shift")
            if scenario in NEEDS_VALUE and value is None:
                raise FormError(f"{SCENARIOS[scenario]}: give a value")
        except FormError as error:
            return await self.group(request, str(error), 400)
        topic = form.get("topic", "").strip()

        def loader() -> Context:
            inspector = self.services.inspector
            detail = inspector.group(group_id)
            committed = inspector.committed(group_id)
            if topic:
                described = self.services.admin.describe_topics([topic])[topic]
                if isinstance(described, KafkaException):
                    raise described
                partitions = [TopicPartition(topic, p.partition) for p in described.partitions]
            else:
                partitions = sorted(committed)
            earliest = inspector.offsets(partitions, OffsetSpec.earliest())
            latest = inspector.offsets(partitions, OffsetSpec.latest())
            by_time = inspector.offsets(partitions, OffsetSpec.for_timestamp(value)) \
                if scenario == "to-datetime" and value is not None else None
            plan = plan_reset(scenario, partitions, committed, earliest, latest,
                              value if scenario != "to-datetime" else None, by_time)
            return {"group": detail, "plan": plan, "committed": committed,
                    "plan_json": json.dumps([[tp.topic, tp.partition, offset] for tp, offset in plan.items()])}
        return await self.load(request, "reset.html", "groups", loader, group_id=group_id, scenario=scenario)

    async def _execute_reset(self, request: Request, group_id: str, form: dict[str, str]) -> Response:
        try:
            plan: dict[tuple[str, int], int] = {TopicPartition(str(topic), int(partition)): int(offset)
                    for topic, partition, offset in json.loads(form.get("plan", "[]"))}
        except (ValueError, TypeError):
            return await self.group(request, "The reset plan was malformed; nothing was changed.", 400)

        def execute() -> str | None:
            detail = self.services.inspector.group(group_id)
            state = detail.description.state
            if state not in INACTIVE_STATES:
                return (f"Offsets can only be reset while the group is inactive, but its state is {state}: "
                        f"stop its consumers first. Nothing was changed.")
            results = self.services.admin.alter_consumer_group_offsets(group_id, plan)
            failures = [f"{tp.topic}-{tp.partition}: {error}" for tp, error in results.items() if error is not None]
            return "Kafka refused some offsets: " + "; ".join(failures) if failures else None
        try:
            problem = await run_in_threadpool(execute)
        except KafkaException as error:
            return self.failure(request, error, "groups")
        if problem is not None:
            return await self.group(request, problem, 409)
        return RedirectResponse(group_url(group_id) + "&done=reset", 303)

    # what the script fetches

    async def status(self, request: Request) -> Response:
        """The status line alone, for pages whose other parts do not change by themselves."""
        page = self.templates.get_template("status.html").render(settings=self.settings,
                                                                 status=self.services.sampler.status)
        return HTMLResponse(page)

    async def series(self, request: Request) -> Response:
        return JSONResponse(self.services.sampler.snapshot())


def create_app(settings: ConsoleSettings, services: ConsoleServices | None = None) -> Starlette:
    """The console as an ASGI application; it starts its sampler on startup and closes its
    clients on shutdown (services made here are owned by the application)."""
    owned = services is None
    services = services or ConsoleServices(settings)
    pages = Pages(services)

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
        Route("/topics", pages.topics),
        Route("/topics", pages.create_topic, methods=["POST"]),
        Route("/topics/{name}", pages.topic),
        Route("/topics/{name}/partitions", pages.add_partitions, methods=["POST"]),
        Route("/topics/{name}/delete", pages.delete_topic, methods=["POST"]),
        Route("/topics/{name}/messages", pages.messages),
        Route("/topics/{name}/messages", pages.produce, methods=["POST"]),
        Route("/topics/{name}/messages/{partition:int}/{offset:int}/{part:str}", pages.download),
        Route("/groups", pages.groups),
        Route("/group", pages.group),
        Route("/group/reset", pages.reset, methods=["POST"]),
        Route("/api/series", pages.series),
        Route("/api/status", pages.status),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)], lifespan=lifespan)
