"""DescribeLogDirs (key 35), v0–v4: this broker's log dirs, and in each the partitions it holds
with their size (bytes of their segments) and offset lag; v3 adds the top-level error code, v4
each dir's total and usable bytes (of its file system).

A null topic list means every partition; named partitions this broker does not hold are left
out, as in Kafka. The offset lag is Kafka's for a current replica: how far the log end is behind
the local high watermark (never negative, so 0: a follower does not know its leader's log end).
Gaps: is_future_key is always false (no AlterReplicaLogDirs, so no replica is ever moving
between dirs); every dir is reported
online (a dir that fails is not taken offline, so KAFKA_STORAGE_ERROR is never answered).
Needs DESCRIBE on the cluster: without it the answer is empty (v3+: CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import shutil
from collections import defaultdict

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse

API_KEY = 35
_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = DescribeLogDirsResponse.DescribeLogDirsTopic
_Partition = DescribeLogDirsResponse.DescribeLogDirsPartition


def handle(context: BrokerContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not context.allowed(AclOperation.DESCRIBE):
        return DescribeLogDirsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    host = context.partitions
    wanted = None if request.topics is None else \
        {(topic.topic, index) for topic in request.topics for index in topic.partitions}
    results = []
    for directory in host.log_dirs():
        by_topic: dict[str, list] = defaultdict(list)
        held = host.logs_in(directory)
        for (topic, index), log in sorted(held.items()):
            if wanted is not None and (topic, index) not in wanted:
                continue
            by_topic[topic].append(_Partition(partition_index=index, partition_size=log.size_in_bytes(),
                                              offset_lag=max(log.high_watermark - log.log_end_offset, 0),
                                              is_future_key=False))
        usage = shutil.disk_usage(directory)
        results.append(_Result(error_code=ErrorCode.NONE, log_dir=directory,
                               topics=[_Topic(name=name, partitions=parts) for name, parts in by_topic.items()],
                               total_bytes=usage.total, usable_bytes=usage.free))
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, results=results)


HANDLERS = [Handler(API_KEY, 0, 4, handle)]
