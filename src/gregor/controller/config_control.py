"""Config changes for TOPIC, BROKER and GROUP resources (Kafka's ConfigurationControlManager).

AlterConfigs replaces a resource's whole config set; IncrementalAlterConfigs applies SET,
DELETE, APPEND and SUBTRACT per key (APPEND/SUBTRACT only on LIST keys, starting from the
current value or Kafka's default). The resulting set is validated as a whole, and only the
keys whose value changes become ConfigRecords (value None deletes).
"""

from __future__ import annotations

from typing import Callable, Mapping

from gregor.controller.operations import (
    AlterConfigOp, AlterConfigsResult, ConfigOp, ControllerResult,
)
from gregor.metadata.group_configs import (
    BROKER_GROUP_DEFAULTS, GROUP_RESOURCE, SHARE_BROKER_DEFAULTS, BrokerValue, validate_group_configs,
)
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.topic_configs import TOPIC_CONFIG_KEYS, ConfigType, validate_topic_configs
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ConfigRecord

BrokerConfigValidator = Callable[[str, "str | None"], "str | None"]


class ConfigurationControl:
    def __init__(self, broker_validator: BrokerConfigValidator,
                 group_bounds: Mapping[str, BrokerValue] | None = None) -> None:
        """`group_bounds`: the broker keys group configs default to and must lie within
        (default: Kafka's defaults of BROKER_GROUP_DEFAULTS and SHARE_BROKER_DEFAULTS)."""
        self.broker_validator = broker_validator
        self.group_bounds = group_bounds or {**BROKER_GROUP_DEFAULTS, **SHARE_BROKER_DEFAULTS}

    def _resource_error(self, image: MetadataImage, resource_type: int, name: str) -> AlterConfigsResult | None:
        if resource_type == TOPIC_RESOURCE:
            if not name:
                return AlterConfigsResult(resource_type, name, ErrorCode.INVALID_REQUEST,
                                          "Default topic resources are not allowed.")
            if name not in image.topics:
                return AlterConfigsResult(resource_type, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                          f"Topic {name} does not exist.")
            return None
        if resource_type == BROKER_RESOURCE:
            if name and not (name.isdigit() and int(name) <= 2 ** 31 - 1):
                return AlterConfigsResult(resource_type, name, ErrorCode.INVALID_REQUEST,
                                          f"Illegal broker id {name}: a broker resource is \"\" or a broker id.")
            return None
        if resource_type == GROUP_RESOURCE:
            if not name:
                return AlterConfigsResult(resource_type, name, ErrorCode.INVALID_REQUEST,
                                          "Group name must not be empty.")
            return None  # as Kafka: a group need not exist to be configured
        return AlterConfigsResult(resource_type, name, ErrorCode.INVALID_REQUEST,
                                  f"Unsupported config resource type {resource_type}.")

    def _finish(self, image: MetadataImage, resource_type: int, name: str,
                final: dict[str, str]) -> ControllerResult[AlterConfigsResult]:
        if resource_type == TOPIC_RESOURCE:
            reason = validate_topic_configs(final)
        elif resource_type == GROUP_RESOURCE:
            reason = validate_group_configs(final, self.group_bounds)
        else:
            reason = next(filter(None, (self.broker_validator(k, v) for k, v in sorted(final.items()))), None)
        if reason:
            return ControllerResult(AlterConfigsResult(resource_type, name, ErrorCode.INVALID_CONFIG, reason))
        current = image.configs.get((resource_type, name), {})
        records = [ConfigRecord(resource_type=resource_type, resource_name=name, name=key, value=final.get(key))
                   for key in sorted(set(current) | set(final)) if current.get(key) != final.get(key)]
        return ControllerResult(AlterConfigsResult(resource_type, name), tuple(records))

    def alter(self, image: MetadataImage, resource_type: int, name: str,
              configs: Mapping[str, str | None]) -> ControllerResult[AlterConfigsResult]:
        error = self._resource_error(image, resource_type, name)
        if error is not None:
            return ControllerResult(error)
        return self._finish(image, resource_type, name, {k: v for k, v in configs.items() if v is not None})

    def incremental_alter(self, image: MetadataImage, resource_type: int, name: str,
                          ops: list[ConfigOp]) -> ControllerResult[AlterConfigsResult]:
        error = self._resource_error(image, resource_type, name)
        if error is not None:
            return ControllerResult(error)
        keys = [op.name for op in ops]
        if len(set(keys)) != len(keys):
            return ControllerResult(AlterConfigsResult(resource_type, name, ErrorCode.INVALID_REQUEST,
                                                       "Error due to duplicate config keys"))
        final = dict(image.configs.get((resource_type, name), {}))
        for op in ops:
            if op.op == AlterConfigOp.SET:
                if op.value is None:
                    return ControllerResult(AlterConfigsResult(resource_type, name, ErrorCode.INVALID_CONFIG,
                                                               f"Null value not supported for {op.name}"))
                final[op.name] = op.value
            elif op.op == AlterConfigOp.DELETE:
                final.pop(op.name, None)
            elif op.op in (AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT):
                key = TOPIC_CONFIG_KEYS.get(op.name) if resource_type == TOPIC_RESOURCE else None
                if key is None or key.type != ConfigType.LIST:
                    return ControllerResult(AlterConfigsResult(
                        resource_type, name, ErrorCode.INVALID_CONFIG,
                        f"Can't {AlterConfigOp(op.op).name} to key {op.name} because its type is not LIST."))
                current = final.get(op.name, key.default)
                items = [item.strip() for item in current.split(",") if item.strip()]
                given = [item.strip() for item in (op.value or "").split(",") if item.strip()]
                if op.op == AlterConfigOp.APPEND:
                    items += [item for item in given if item not in items]
                else:
                    items = [item for item in items if item not in given]
                final[op.name] = ",".join(items)
            else:
                return ControllerResult(AlterConfigsResult(resource_type, name, ErrorCode.INVALID_REQUEST,
                                                           f"Unknown config operation {op.op}"))
        return self._finish(image, resource_type, name, final)
