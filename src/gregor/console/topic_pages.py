"""The topic pages: the list, one topic, its messages; creating, growing and deleting topics,
producing a test record, downloading a whole key or value."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gregor.client import KafkaException
from gregor.client.admin import NewTopic
from gregor.console import content, forms
from gregor.console.forms import FormError
from gregor.console.rendering import UNREACHABLE, Context, Renderer, changes_cluster, topic_url


class TopicPages:
    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.services = renderer.services
        self.settings = renderer.settings

    async def topics(self, request: Request, error: str | None = None, form: dict[str, str] | None = None,
                     status_code: int = 200) -> Response:
        def loader() -> Context:
            summaries = self.services.inspector.topics()
            rates = {summary.name: self.services.sampler.topic_rate(summary.name) for summary in summaries}
            return {"topics": summaries, "rates": rates}
        return await self.renderer.load(request, "topics.html", "topics", loader, status_code, error=error,
                                        form=form or {}, deleted=request.query_params.get("topic"))

    @changes_cluster("topics")
    async def create_topic(self, request: Request, form: dict[str, str]) -> Response:
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
            return self.renderer.failure(request, error, "topics")
        if isinstance(result, KafkaException):
            return await self.topics(request, f"Kafka refused to create topic {name!r}: {result}", form, 400)
        await run_in_threadpool(self.services.inspector.await_topic, name, self.settings.timeout_s)
        return RedirectResponse(topic_url(name) + "?done=created", 303)

    async def topic(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        name = request.path_params["name"]
        return await self.renderer.load(request, "topic.html", "topics",
                                        lambda: {"topic": self.services.inspector.topic(name),
                                                 "rate": self.services.sampler.topic_rate(name)},
                                        status_code, error=error)

    @changes_cluster("topics")
    async def add_partitions(self, request: Request, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        try:
            total = forms.required_int(form.get("total"), "new total of partitions", 1)
        except FormError as error:
            return await self.topic(request, str(error), 400)
        try:
            result = (await run_in_threadpool(self.services.admin.create_partitions, {name: total}))[name]
        except KafkaException as error:
            return self.renderer.failure(request, error, "topics")
        if result is not None:
            return await self.topic(request, f"Kafka refused to add partitions: {result}", 400)
        return RedirectResponse(topic_url(name) + "?done=partitions", 303)

    @changes_cluster("topics")
    async def delete_topic(self, request: Request, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
        if form.get("confirm", "") != name:
            return await self.topic(request, "Not deleted: type the topic's name exactly to confirm.", 400)
        try:
            result = (await run_in_threadpool(self.services.admin.delete_topics, [name]))[name]
        except KafkaException as error:
            return self.renderer.failure(request, error, "topics")
        if result is not None:
            return await self.topic(request, f"Kafka refused to delete the topic: {result}", 400)
        return RedirectResponse("/topics?" + urlencode({"done": "deleted", "topic": name}), 303)

    async def messages(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        name = request.path_params["name"]
        params = request.query_params
        fmt = params.get("format", "auto")
        try:
            partition = forms.optional_int(params.get("partition"), "partition", 0) or 0
            offset = forms.optional_int(params.get("offset"), "offset", 0)
            timestamp = forms.timestamp_ms(params.get("timestamp"), "timestamp")
            limit = forms.optional_int(params.get("limit"), "limit", 1) or 20
            produced = forms.optional_int(params.get("produced"), "produced")
            if fmt not in content.FORMATS:
                raise FormError(f"format must be one of {', '.join(content.FORMATS)}")
        except FormError as bad:
            partition, offset, timestamp, limit, fmt, produced = 0, None, None, 20, "auto", None
            error, status_code = str(bad), 400

        def loader() -> Context:
            description = self.services.admin.describe_topics([name])[name]
            if isinstance(description, KafkaException):
                raise description
            page = None
            if any(p.partition == partition for p in description.partitions):
                page = self.services.reader.read(name, partition, offset, timestamp, limit)
            return {"partitions": [p.partition for p in description.partitions], "page": page}
        return await self.renderer.load(request, "messages.html", "topics", loader, status_code, topic=name,
                                        partition=partition, offset=offset, limit=limit, format=fmt,
                                        timestamp=params.get("timestamp", ""), produced=produced,
                                        limit_bytes=self.settings.value_limit, error=error)

    async def download(self, request: Request) -> Response:
        name, part = request.path_params["name"], request.path_params["part"]
        partition, offset = request.path_params["partition"], request.path_params["offset"]
        if part not in ("key", "value"):
            return Response("download key or value\n", 404, media_type="text/plain")
        try:
            record = await run_in_threadpool(self.services.reader.one, name, partition, offset)
        except KafkaException as error:
            return self.renderer.failure(request, error, "topics")
        if record is None:
            return Response(f"no record at offset {offset} of {name}-{partition}\n", 404, media_type="text/plain")
        data = record.key if part == "key" else record.value
        filename = f"{name}-{partition}-{offset}.{part}.bin"
        return Response(data or b"", media_type="application/octet-stream",
                        headers={"content-disposition": f'attachment; filename="{filename}"'})

    @changes_cluster("topics")
    async def produce(self, request: Request, form: dict[str, str]) -> Response:
        name = request.path_params["name"]
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
                return self.renderer.failure(request, error, "topics")
            return await self.messages(request, f"Kafka refused the record: {error}", 400)
        return RedirectResponse(topic_url(name, "messages") + "?" + urlencode(
            {"partition": metadata.partition, "offset": metadata.offset, "produced": metadata.offset,
             "done": "produced"}), 303)
