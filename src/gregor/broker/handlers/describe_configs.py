"""DescribeConfigs (key 32), v0–v4: topic, broker and group configs with their sources and synonyms.

A broker resource is described the same way on a controller listener (`controller_describe_configs`):
`describe_broker` takes the node's committed image and static config from either."""

from __future__ import annotations

from typing import Protocol

from gregor.broker.config import BROKER_CONFIG_KEYS, BrokerConfig
from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.group_configs import GROUP_CONFIGS, GROUP_RESOURCE
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.listener_configs import listener_ssl_key
from gregor.metadata.topic_configs import ConfigSource, ConfigType
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse

API_KEY = 32
BROKER_CONFIG_TYPES = {"boolean": ConfigType.BOOLEAN, "string": ConfigType.STRING, "int": ConfigType.INT,
                       "long": ConfigType.LONG, "double": ConfigType.DOUBLE, "list": ConfigType.LIST,
                       "password": ConfigType.PASSWORD}

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


class NodeConfigs(Protocol):
    """What a node's broker resource is described from (a broker's metadata view, a controller's quorum)."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def node_id(self) -> int: ...


def handle(context: BrokerContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        if resource.resource_type == BROKER_RESOURCE:
            allowed = context.allowed(AclOperation.DESCRIBE_CONFIGS)
            results.append(describe_broker(context.metadata, context.version, request, resource, allowed))
            continue
        wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        result = _Result(error_code=ErrorCode.NONE, resource_type=resource.resource_type,
                         resource_name=resource.resource_name, configs=[])
        refused = _refused(context, resource.resource_type, resource.resource_name)
        if refused is not None:
            result.error_code, result.error_message = refused, "Authorization failed."
            entries = []
        elif resource.resource_type == TOPIC_RESOURCE:
            if resource.resource_name in context.metadata.image.topics:
                entries = _topic_entries(context, request, resource.resource_name)
            else:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = f"Topic {resource.resource_name} does not exist."
                entries = []
        elif resource.resource_type == GROUP_RESOURCE:
            if resource.resource_name:
                entries = _group_entries(context, request, resource.resource_name)
            else:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = "Group name must not be empty."
                entries = []
        else:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"Unsupported resource type {resource.resource_type}"
            entries = []
        result.configs = [e for e in entries if wanted is None or e.name in wanted]
        results.append(result)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


def describe_broker(node: NodeConfigs, version: int, request: DescribeConfigsRequest,
                    resource: DescribeConfigsRequest.DescribeConfigsResource, allowed: bool) -> _Result:
    """One broker resource of `node`: its id (every key, static and dynamic layers) or "" (the
    cluster-wide dynamic defaults); `allowed`: DESCRIBE_CONFIGS on the cluster, checked by the caller."""
    result = _Result(error_code=ErrorCode.NONE, resource_type=resource.resource_type,
                     resource_name=resource.resource_name, configs=[])
    if not allowed:
        result.error_code, result.error_message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Authorization failed."
    elif resource.resource_name not in ("", str(node.node_id)):
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = (f"Unexpected broker id, expected {node.node_id} or empty string, but received "
                                f"{resource.resource_name}")
    else:
        wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        result.configs = [e for e in _broker_entries(node, version, request, resource.resource_name)
                          if wanted is None or e.name in wanted]
    return result


def _refused(context: BrokerContext, resource_type: int, name: str) -> ErrorCode | None:
    """DESCRIBE_CONFIGS on the topic or group (Kafka's checks; a broker resource's: on the cluster)."""
    if resource_type == TOPIC_RESOURCE:
        allowed = context.allowed(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
        return None if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type == GROUP_RESOURCE:
        allowed = context.allowed(AclOperation.DESCRIBE_CONFIGS, ResourceType.GROUP, name)
        return None if allowed else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def _entry(version: int, request: DescribeConfigsRequest, name: str, value: str | None,
           source: ConfigSource, config_type: ConfigType, read_only: bool, synonyms: list[_Synonym],
           documentation: str | None) -> _Entry:
    entry = _Entry(name=name, value=value, read_only=read_only, config_source=source, is_sensitive=False,
                   config_type=config_type, synonyms=[])
    if version == 0:
        entry.is_default = source == ConfigSource.DEFAULT_CONFIG
    if version >= 1 and request.include_synonyms:
        entry.synonyms = synonyms
    if version >= 3 and request.include_documentation:
        entry.documentation = documentation
    return entry


def _topic_entries(context: BrokerContext, request: DescribeConfigsRequest, topic: str) -> list[_Entry]:
    return [_entry(context.version, request, e.name, e.value, e.source, e.type, e.read_only,
                   [_Synonym(name=s.name, value=s.value, source=s.source) for s in e.synonyms], e.documentation)
            for e in context.metadata.topic_config_entries(topic)]


def _group_entries(context: BrokerContext, request: DescribeConfigsRequest, group: str) -> list[_Entry]:
    """Each group config: the group's override, else the broker's value of its synonym."""
    overrides = context.metadata.image.configs.get((GROUP_RESOURCE, group), {})
    entries = []
    for name, key in sorted(GROUP_CONFIGS.items()):
        if name in overrides:
            value, source = overrides[name], ConfigSource.GROUP_CONFIG
        else:
            value = key.default if key.synonym is None else str(context.metadata.config.get(key.synonym))
            source = ConfigSource.DEFAULT_CONFIG
        config_type = ConfigType.INT if key.type == "int" else ConfigType.STRING
        entries.append(_entry(context.version, request, name, value, source, config_type, False,
                              [_Synonym(name=name, value=value, source=source)], key.doc))
    return entries


def _broker_entries(metadata: NodeConfigs, version: int, request: DescribeConfigsRequest,
                    resource_name: str) -> list[_Entry]:
    """A broker id: every key with static and dynamic layers; "": the cluster-wide dynamic defaults."""
    defaults = metadata.image.broker_config("")
    if resource_name == "":
        return [_broker_entry(version, request, name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
                for name, value in sorted(defaults.items())]
    dynamic = metadata.image.broker_config(metadata.node_id)
    entries = []
    value: str | None
    for name in sorted(set(BROKER_CONFIG_KEYS) | set(dynamic) | set(defaults)):
        if name in dynamic:
            value, source = dynamic[name], ConfigSource.DYNAMIC_BROKER_CONFIG
        elif name in defaults:
            value, source = defaults[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        elif name in metadata.config.originals:
            value, source = metadata.config.originals[name], ConfigSource.STATIC_BROKER_CONFIG
        else:
            value, source = metadata.config.default(name), ConfigSource.DEFAULT_CONFIG
        entries.append(_broker_entry(version, request, name, value, source))
    return entries


def _broker_entry(version: int, request: DescribeConfigsRequest, name: str, value: str | None,
                  source: ConfigSource) -> _Entry:
    key = BROKER_CONFIG_KEYS.get(name)
    config_type = BROKER_CONFIG_TYPES.get(key.type, ConfigType.STRING) if key else ConfigType.STRING
    read_only = key.read_only if key else False
    store_key = listener_ssl_key(name)  # a listener's dynamic store key: a password like its global key
    typed = key or (BROKER_CONFIG_KEYS.get(store_key[1]) if store_key else None)
    sensitive = typed is not None and typed.type == "password"
    if sensitive:
        value = None  # Kafka never sends a password (key store passwords, inline keys) back
    entry = _entry(version, request, name, value, source, config_type, read_only,
                   [_Synonym(name=name, value=value, source=source)], key.doc if key else None)
    entry.is_sensitive = sensitive
    return entry


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
