"""DescribeConfigs (key 32), v0–v4: topic and broker configs with their sources."""

from __future__ import annotations

from gregor.broker.handlers import Handler, RequestContext
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from gregor.metadata.topic_configs import TOPIC_CONFIG_KEYS, effective_topic_config
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse

API_KEY = 32
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 4, 5
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7, "password": 9}

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def handle(context: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        wanted = set(resource.configuration_keys) if resource.configuration_keys else None
        result = _Result(error_code=ErrorCode.NONE, resource_type=resource.resource_type,
                         resource_name=resource.resource_name)
        if resource.resource_type == TOPIC_RESOURCE:
            entries = _topic_entries(context, resource.resource_name, request)
        elif resource.resource_type == BROKER_RESOURCE:
            entries = _broker_entries(context, resource.resource_name, request)
        else:
            entries = None
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"unsupported resource type {resource.resource_type}"
        if entries is None and not result.error_code:
            result.error_code = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if resource.resource_type == TOPIC_RESOURCE
                                 else ErrorCode.INVALID_REQUEST)
            result.error_message = f"unknown resource '{resource.resource_name}'"
        result.configs = [e for e in entries or [] if wanted is None or e.name in wanted]
        results.append(result)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


def _entry(context: RequestContext, request, name: str, value: str | None, source: int, type_: str,
           read_only: bool, synonyms: list) -> _Entry:
    entry = _Entry(name=name, value=value, read_only=read_only, config_source=source, is_sensitive=False,
                   config_type=CONFIG_TYPES.get(type_, 2))
    if context.version == 0:
        entry.is_default = source == DEFAULT_CONFIG
    if context.version >= 1 and request.include_synonyms:
        entry.synonyms = synonyms
    return entry


def _topic_entries(context: RequestContext, topic: str, request) -> list[_Entry] | None:
    broker = context.broker
    if topic not in broker.image.topics:
        return None
    overrides = broker.image.topic_config(topic)
    defaults = broker.config.topic_defaults()
    entries = []
    for name, (value, is_override) in sorted(effective_topic_config(overrides, defaults).items()):
        key = TOPIC_CONFIG_KEYS[name]
        source = TOPIC_CONFIG if is_override else (
            STATIC_BROKER_CONFIG if key.broker_synonym in broker.config.originals else DEFAULT_CONFIG)
        synonyms = []
        if is_override:
            synonyms.append(_Synonym(name=name, value=value, source=TOPIC_CONFIG))
        if key.broker_synonym and name in defaults:
            synonyms.append(_Synonym(name=key.broker_synonym, value=defaults[name],
                                     source=STATIC_BROKER_CONFIG if key.broker_synonym in broker.config.originals
                                     else DEFAULT_CONFIG))
        entries.append(_entry(context, request, name, value, source, key.type, False, synonyms))
    return entries


def _broker_entries(context: RequestContext, resource_name: str, request) -> list[_Entry] | None:
    broker = context.broker
    if resource_name not in ("", str(broker.node_id)):
        return None
    from gregor.broker.config import BROKER_CONFIG_KEYS
    dynamic = broker.image.broker_config(broker.node_id)
    entries = []
    for name, value, is_default in broker.config.describe():
        key = BROKER_CONFIG_KEYS[name]
        source = DEFAULT_CONFIG if is_default else STATIC_BROKER_CONFIG
        if name in dynamic:
            value, source = dynamic[name], DYNAMIC_BROKER_CONFIG
        entries.append(_entry(context, request, name, value, source, key.type, key.read_only, []))
    return entries


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
