"""ListConfigResources (key 74, KIP-1142; v0 was ListClientMetricsResources), v0–v1.

As Kafka's KafkaApis answers it: the principal needs DESCRIBE_CONFIGS on the cluster, else the
whole answer is CLUSTER_AUTHORIZATION_FAILED. v0 lists client-metrics resources only; v1 the
types asked (none asked: every type), a type outside TOPIC, BROKER, BROKER_LOGGER,
CLIENT_METRICS and GROUP making the whole answer UNSUPPORTED_VERSION. Resources come in Kafka's
order, groups, client metrics, broker loggers, brokers, then topics: the groups with dynamic
configs, the brokers with an endpoint on the request's listener, every topic. Gregor keeps no
client-metrics subscriptions (KIP-714) and describes no broker loggers, so those types list nothing.
"""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.metadata.group_configs import GROUP_RESOURCE
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ListConfigResourcesRequest, ListConfigResourcesResponse

API_KEY = 74
MIN_VERSION, MAX_VERSION = 0, 1

BROKER_LOGGER_RESOURCE, CLIENT_METRICS_RESOURCE = 8, 16
SUPPORTED_TYPES = frozenset({TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE, CLIENT_METRICS_RESOURCE,
                             GROUP_RESOURCE})

_Resource = ListConfigResourcesResponse.ConfigResource


def handle(context: BrokerContext, request: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
    if not context.allowed(AclOperation.DESCRIBE_CONFIGS):
        return ListConfigResourcesResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    if context.version == 0:
        wanted: frozenset[int] = frozenset({CLIENT_METRICS_RESOURCE})
    else:
        wanted = frozenset(request.resource_types) or SUPPORTED_TYPES
        if not wanted <= SUPPORTED_TYPES:
            return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    image = context.metadata.image
    brokers = sorted(node_id for node_id, _ in context.metadata.endpoints_for(context.connection.listener))
    listed = {
        GROUP_RESOURCE: sorted(name for kind, name in image.configs if kind == GROUP_RESOURCE),
        CLIENT_METRICS_RESOURCE: [],
        BROKER_LOGGER_RESOURCE: [],
        BROKER_RESOURCE: [str(node_id) for node_id in brokers],
        TOPIC_RESOURCE: sorted(image.topics),
    }
    return ListConfigResourcesResponse(error_code=ErrorCode.NONE, config_resources=[
        _Resource(resource_name=name, resource_type=kind)
        for kind, names in listed.items() if kind in wanted for name in names])


HANDLERS = [Handler(API_KEY, MIN_VERSION, MAX_VERSION, handle)]
