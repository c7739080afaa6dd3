"""The consumer group pages: the list, one group with its lag, and resetting its offsets (a plan
shown first, committed as shown on confirmation)."""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gregor.client import KafkaException, TopicPartition
from gregor.client.admin import OffsetSpec
from gregor.console import forms
from gregor.console.forms import FormError
from gregor.console.rendering import Context, Renderer, changes_cluster, group_url
from gregor.console.reset import NEEDS_VALUE, SCENARIOS, plan_reset

INACTIVE_STATES = ("Empty", "Dead")


class GroupPages:
    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.services = renderer.services
        self.settings = renderer.settings

    async def groups(self, request: Request) -> Response:
        return await self.renderer.load(request, "groups.html", "groups",
                                        lambda: {"groups": self.services.inspector.groups()})

    async def group(self, request: Request, error: str | None = None, status_code: int = 200) -> Response:
        group_id = request.query_params.get("id", "")
        return await self.renderer.load(request, "group.html", "groups",
                                        lambda: {"group": self.services.inspector.group(group_id)},
                                        status_code, error=error, group_id=group_id)

    @changes_cluster("groups")
    async def reset(self, request: Request, form: dict[str, str]) -> Response:
        """A reset shows its plan first (as --dry-run); the plan shown is what a confirmation commits."""
        group_id = request.query_params.get("id", "")
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
        return await self.renderer.load(request, "reset.html", "groups", loader, group_id=group_id, scenario=scenario)

    async def _execute_reset(self, request: Request, group_id: str, form: dict[str, str]) -> Response:
        try:
            plan: dict[tuple[str, int], int] = {
                TopicPartition(str(topic), int(partition)): int(offset)
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
            return self.renderer.failure(request, error, "groups")
        if problem is not None:
            return await self.group(request, problem, 409)
        return RedirectResponse(group_url(group_id) + "&done=reset", 303)
