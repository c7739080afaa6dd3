"""What the share group offsets APIs check first, in Kafka's order: the principal's ACL on the
group, the group's coordinator, and that the id is not another kind of group's."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode


def group_error(context: BrokerContext, group_id: str,
                operation: AclOperation) -> tuple[ErrorCode, str | None] | None:
    """GROUP_AUTHORIZATION_FAILED without `operation` on the group, INVALID_GROUP_ID for an
    empty id, NOT_COORDINATOR (or COORDINATOR_NOT_AVAILABLE) from a broker that does not
    coordinate the group, GROUP_ID_NOT_FOUND for a classic or consumer group's id; None when the
    request may go on."""
    if not context.allowed(operation, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    error = context.shares.coordinator_error(group_id)
    if error is not None:
        return error, None
    groups = context.groups.coordinator
    if group_id in groups.groups or group_id in groups.consumer_groups:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
    return None
