"""Every API a client can call, authorized as Kafka's KafkaApis authorizes it: each request goes
through a real broker's dispatcher and handlers (in process, one node), once as `User:bob`, who
holds no ACL and must get Kafka's error, once as `User:alice`, who holds the ACLs and must not.

The broker runs `StandardAuthorizer` with `allow.everyone.if.no.acl.found=false`; `User:admin`
is a super user and sets things up (topics, ACLs).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import uuid
from functools import partial
from typing import Any, Callable

from gregor.broker.config import BrokerConfig
from gregor.broker.dispatcher import Dispatcher
from gregor.broker.handlers import BrokerContext, BrokerServices, client_handlers
from gregor.broker.network import ConnectionInfo, Pipelined, Throttled
from gregor.broker.peer_channel import decode_response
from gregor.broker.server import Broker
from gregor.metadata.authorizer import STANDARD_AUTHORIZER
from gregor.protocol.error_codes import ErrorCode as E
from gregor.protocol.headers import encode_request
from gregor.protocol.messages import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeProducersRequest, DescribeTransactionsRequest,
    EndTxnRequest, TxnOffsetCommitRequest, WriteTxnMarkersRequest,
)
from gregor.protocol.messages import (
    AlterClientQuotasRequest, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateAclsRequest,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteAclsRequest,
    DeleteGroupsRequest, DeleteRecordsRequest, DeleteTopicsRequest, DescribeAclsRequest, DescribeClientQuotasRequest,
    DescribeClusterRequest, DescribeConfigsRequest, DescribeGroupsRequest, DescribeLogDirsRequest,
    ElectLeadersRequest, FetchRequest, FindCoordinatorRequest, HeartbeatRequest, IncrementalAlterConfigsRequest,
    InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest, ListOffsetsRequest,
    MetadataRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest,
    ProduceRequest, ReadShareGroupStateRequest, ReadShareGroupStateSummaryRequest, InitializeShareGroupStateRequest,
    DeleteShareGroupStateRequest, DescribeShareGroupOffsetsRequest, AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest, ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest, SyncGroupRequest, UpdateFeaturesRequest, WriteShareGroupStateRequest,
)
from gregor.protocol.messages import DescribeTopicPartitionsRequest, ListConfigResourcesRequest
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest
from gregor.protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest
from tests.unit.storage.helpers import batch

ADMIN, ALICE, BOB, CAROL = "User:admin", "User:alice", "User:bob", "User:carol"
TOPIC, GROUP, TXN = "t", "g", "tx"
ALL, ALLOW, LITERAL = 2, 3, 3
TOPIC_RT, GROUP_RT, CLUSTER_RT, TXN_RT = 2, 3, 4, 5
_ids = itertools.count(1)


class Node:
    """A one-node broker whose client handlers are called with a chosen principal."""

    def __init__(self, broker: Broker) -> None:
        services = BrokerServices(partitions=broker.partitions, metadata=broker.metadata,
                                  controller=broker.controller, groups=broker.groups, metrics=broker.events,
                                  shares=broker.shares, authorizer=broker.authorizer, quotas=broker.quotas,
                                  transactions=broker.transactions,
                                  transaction_completed=broker.groups.transaction_completed)
        self.dispatcher = Dispatcher(client_handlers(), partial(BrokerContext, services), broker.clock)

    async def call(self, principal: str, request: Any, version: int) -> Any:
        frame = encode_request(next(_ids), "matrix", request, version)
        result: Any = self.dispatcher.dispatch(bytearray(frame[4:]), ConnectionInfo(
            "127.0.0.1:40000", "PLAINTEXT", next(_ids), principal))
        if isinstance(result, Throttled):
            result = result.answer
        if isinstance(result, Pipelined):
            result = result.awaitable
        if inspect.isawaitable(result):
            result = await result
        _, response = decode_response(memoryview(b"".join(bytes(part) for part in result)[4:]),
                                      request.API_KEY, version)
        return response


def _acl(resource_type: int, name: str) -> CreateAclsRequest.AclCreation:
    return CreateAclsRequest.AclCreation(resource_type=resource_type, resource_name=name, resource_pattern_type=LITERAL,
                                         principal=ALICE, host="*", operation=ALL, permission_type=ALLOW)


def _topic_of(response: Any, attribute: str = "topics", partitions: str = "partitions") -> int:
    return getattr(getattr(response, attribute)[0], partitions)[0].error_code


# (name, request, version, the error code of the answer, Kafka's error for bob)
CASES: list[tuple[str, Callable[[], Any], int, Callable[[Any], int], int]] = [
    ("Produce", lambda: ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch())])]), 9,
     lambda r: r.responses[0].partition_responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("Produce (transactional)", lambda: ProduceRequest(transactional_id=TXN, acks=1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=batch())])]), 9,
     lambda r: r.responses[0].partition_responses[0].error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("Fetch", lambda: FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12,
     lambda r: r.responses[0].partitions[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("Fetch as a follower", lambda: FetchRequest(replica_id=7, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12,
     lambda r: r.responses[0].partitions[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("ListOffsets", lambda: ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 5,
     _topic_of, E.TOPIC_AUTHORIZATION_FAILED),
    ("Metadata", lambda: MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                         allow_auto_topic_creation=False), 9,
     lambda r: r.topics[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("Metadata auto-creating", lambda: MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t-new")],
                                                       allow_auto_topic_creation=True), 9,
     lambda r: r.topics[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("DescribeTopicPartitions", lambda: DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequest.TopicRequest(name=TOPIC)]), 0,
     lambda r: r.topics[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("ListConfigResources", lambda: ListConfigResourcesRequest(resource_types=[]), 1,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("OffsetForLeaderEpoch", lambda: OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=TOPIC, partitions=[
            OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)])]), 3,
     _topic_of, E.TOPIC_AUTHORIZATION_FAILED),
    ("OffsetForLeaderEpoch as a follower", lambda: OffsetForLeaderEpochRequest(replica_id=7, topics=[
        OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=TOPIC, partitions=[
            OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, leader_epoch=0)])]), 3,
     _topic_of, E.TOPIC_AUTHORIZATION_FAILED),
    ("DeleteRecords", lambda: DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=TOPIC, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)])]), 1,
     _topic_of, E.TOPIC_AUTHORIZATION_FAILED),
    ("DescribeConfigs (topic)", lambda: DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=TOPIC, configuration_keys=None)]), 2,
     lambda r: r.results[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("DescribeConfigs (broker)", lambda: DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None)]), 2,
     lambda r: r.results[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("IncrementalAlterConfigs", lambda: IncrementalAlterConfigsRequest(resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=2, resource_name=TOPIC, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name="retention.ms", config_operation=0, value="100000")])]),
     1, lambda r: r.responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("DescribeConfigs (group)", lambda: DescribeConfigsRequest(resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=32, resource_name=GROUP, configuration_keys=None)]),
     2, lambda r: r.results[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("IncrementalAlterConfigs (group)", lambda: IncrementalAlterConfigsRequest(resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=32, resource_name=GROUP, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name="consumer.session.timeout.ms", config_operation=0,
                                                           value="50000")])]),
     1, lambda r: r.responses[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("CreatePartitions", lambda: CreatePartitionsRequest(timeout_ms=5000, validate_only=True, topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name=TOPIC, count=3, assignments=None)]), 1,
     lambda r: r.results[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("CreateTopics", lambda: CreateTopicsRequest(timeout_ms=5000, validate_only=True, topics=[
        CreateTopicsRequest.CreatableTopic(name="t-created", num_partitions=1, replication_factor=1)]), 5,
     lambda r: r.topics[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("FindCoordinator (group)", lambda: FindCoordinatorRequest(key=GROUP, key_type=0), 3,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("FindCoordinator (transaction)", lambda: FindCoordinatorRequest(key=TXN, key_type=1), 3,
     lambda r: r.error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("JoinGroup", lambda: JoinGroupRequest(group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                           protocol_type="consumer", protocols=[
                                               JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]),
     5, lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("SyncGroup", lambda: SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="m"), 3,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("Heartbeat", lambda: HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m"), 3,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("LeaveGroup", lambda: LeaveGroupRequest(group_id=GROUP, members=[LeaveGroupRequest.MemberIdentity(member_id="m")]),
     3, lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("OffsetCommit", lambda: OffsetCommitRequest(group_id=GROUP, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
        name=TOPIC, partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0,
                                                                                 committed_offset=0)])]), 8,
     _topic_of, E.GROUP_AUTHORIZATION_FAILED),
    ("OffsetFetch", lambda: OffsetFetchRequest(group_id=GROUP, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
        name=TOPIC, partition_indexes=[0])]), 7, lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("DescribeGroups", lambda: DescribeGroupsRequest(groups=[GROUP]), 4,
     lambda r: r.groups[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("DeleteGroups", lambda: DeleteGroupsRequest(groups_names=[GROUP]), 1,
     lambda r: r.results[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("OffsetDelete", lambda: OffsetDeleteRequest(group_id=GROUP, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name=TOPIC, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])]), 0,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("InitProducerId (idempotent)", lambda: InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
     3, lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeCluster", lambda: DescribeClusterRequest(), 0, lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeLogDirs", lambda: DescribeLogDirsRequest(topics=None), 3, lambda r: r.error_code,
     E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeAcls", lambda: DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None,
                                                 pattern_type_filter=1, principal_filter=None, host_filter=None,
                                                 operation=1, permission_type=1), 2,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("CreateAcls", lambda: CreateAclsRequest(creations=[_acl(TOPIC_RT, "other")]), 2,
     lambda r: r.results[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DeleteAcls", lambda: DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=TOPIC_RT, resource_name_filter="other", pattern_type_filter=LITERAL,
        principal_filter=None, host_filter=None, operation=1, permission_type=1)]), 2,
     lambda r: r.filter_results[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeClientQuotas", lambda: DescribeClientQuotasRequest(components=[]), 0,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("AlterClientQuotas", lambda: AlterClientQuotasRequest(validate_only=True, entries=[
        AlterClientQuotasRequest.EntryData(entity=[AlterClientQuotasRequest.EntityData(entity_type="user",
                                                                                        entity_name="x")],
                                           ops=[AlterClientQuotasRequest.OpData(key="producer_byte_rate", value=1.0)])]),
     0, lambda r: r.entries[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("ElectLeaders", lambda: ElectLeadersRequest(election_type=0, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic=TOPIC, partitions=[0])]), 1, lambda r: r.error_code,
     E.CLUSTER_AUTHORIZATION_FAILED),
    ("ListPartitionReassignments", lambda: ListPartitionReassignmentsRequest(topics=None), 0,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeQuorum", lambda: DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])]), 0,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("UpdateFeatures", lambda: UpdateFeaturesRequest(validate_only=True, feature_updates=[
        UpdateFeaturesRequest.FeatureUpdateKey(feature="transaction.version", max_version_level=2)]), 1,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DeleteTopics", lambda: DeleteTopicsRequest(topic_names=["t-doomed"], timeout_ms=5000), 4,
     lambda r: r.responses[0].error_code, E.TOPIC_AUTHORIZATION_FAILED),
    ("ShareGroupHeartbeat", lambda: ShareGroupHeartbeatRequest(group_id=GROUP, member_id="m", member_epoch=0,
                                                               subscribed_topic_names=[TOPIC]), 1,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("ShareGroupDescribe", lambda: ShareGroupDescribeRequest(group_ids=[GROUP]), 1,
     lambda r: r.groups[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("ShareFetch", lambda: ShareFetchRequest(group_id=GROUP, member_id="m", share_session_epoch=0,
                                             max_wait_ms=0, max_records=10, batch_size=10, topics=[]), 1,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("ShareAcknowledge", lambda: ShareAcknowledgeRequest(group_id=GROUP, member_id="m",
                                                         share_session_epoch=1, topics=[]), 1,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("AddPartitionsToTxn", lambda: AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TXN, v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])]), 3,
     lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
     E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("AddPartitionsToTxn v4 (from a broker)", lambda: AddPartitionsToTxnRequest(transactions=[
        AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
            transactional_id=TXN, producer_id=1, producer_epoch=0, verify_only=True, topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])])]), 4,
     lambda r: r.error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("AddOffsetsToTxn", lambda: AddOffsetsToTxnRequest(transactional_id=TXN, producer_id=1, producer_epoch=0,
                                                       group_id=GROUP), 3,
     lambda r: r.error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("EndTxn", lambda: EndTxnRequest(transactional_id=TXN, producer_id=1, producer_epoch=0, committed=True), 3,
     lambda r: r.error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("TxnOffsetCommit", lambda: TxnOffsetCommitRequest(
        transactional_id=TXN, group_id=GROUP, producer_id=1, producer_epoch=0, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]), 3,
     _topic_of, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("WriteTxnMarkers", lambda: WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=1, producer_epoch=0, transaction_result=False, coordinator_epoch=0, topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])])]), 1,
     lambda r: r.markers[0].topics[0].partitions[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeProducers", lambda: DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=TOPIC, partition_indexes=[0])]), 0, _topic_of, E.TOPIC_AUTHORIZATION_FAILED),
    ("DescribeTransactions", lambda: DescribeTransactionsRequest(transactional_ids=[TXN]), 0,
     lambda r: r.transaction_states[0].error_code, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    ("ReadShareGroupState", lambda: ReadShareGroupStateRequest(group_id=GROUP, topics=[
        ReadShareGroupStateRequest.ReadStateData(topic_id=uuid.uuid4(), partitions=[
            ReadShareGroupStateRequest.PartitionData(partition=0, leader_epoch=0)])]), 0,
     lambda r: r.results[0].partitions[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("WriteShareGroupState", lambda: WriteShareGroupStateRequest(group_id=GROUP, topics=[
        WriteShareGroupStateRequest.WriteStateData(topic_id=uuid.uuid4(), partitions=[
            WriteShareGroupStateRequest.PartitionData(partition=0, state_epoch=0, leader_epoch=0, start_offset=0,
                                                      state_batches=[])])]), 0,
     lambda r: r.results[0].partitions[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("InitializeShareGroupState", lambda: InitializeShareGroupStateRequest(group_id=GROUP, topics=[
        InitializeShareGroupStateRequest.InitializeStateData(topic_id=uuid.uuid4(), partitions=[
            InitializeShareGroupStateRequest.PartitionData(partition=0, state_epoch=1, start_offset=0)])]), 0,
     lambda r: r.results[0].partitions[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DeleteShareGroupState", lambda: DeleteShareGroupStateRequest(group_id=GROUP, topics=[
        DeleteShareGroupStateRequest.DeleteStateData(topic_id=uuid.uuid4(), partitions=[
            DeleteShareGroupStateRequest.PartitionData(partition=0)])]), 0,
     lambda r: r.results[0].partitions[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("ReadShareGroupStateSummary", lambda: ReadShareGroupStateSummaryRequest(group_id=GROUP, topics=[
        ReadShareGroupStateSummaryRequest.ReadStateSummaryData(topic_id=uuid.uuid4(), partitions=[
            ReadShareGroupStateSummaryRequest.PartitionData(partition=0, leader_epoch=0)])]), 0,
     lambda r: r.results[0].partitions[0].error_code, E.CLUSTER_AUTHORIZATION_FAILED),
    ("DescribeShareGroupOffsets", lambda: DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=GROUP, topics=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestTopic(
                topic_name=TOPIC, partitions=[0])])]),
     0, lambda r: r.groups[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("AlterShareGroupOffsets", lambda: AlterShareGroupOffsetsRequest(group_id=GROUP, topics=[
        AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=TOPIC, partitions=[
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])]),
     0, lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("DeleteShareGroupOffsets", lambda: DeleteShareGroupOffsetsRequest(group_id=GROUP, topics=[
        DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC)]), 0,
     lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("ConsumerGroupHeartbeat", lambda: ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id="m-848", member_epoch=0, rebalance_timeout_ms=1000, subscribed_topic_names=[TOPIC],
        topic_partitions=[]), 1, lambda r: r.error_code, E.GROUP_AUTHORIZATION_FAILED),
    ("ConsumerGroupDescribe", lambda: ConsumerGroupDescribeRequest(group_ids=[GROUP]), 0,
     lambda r: r.groups[0].error_code, E.GROUP_AUTHORIZATION_FAILED),
]
AUTHORIZATION_ERRORS = {E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED,
                        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def _config(tmp_path, **keys: str) -> BrokerConfig:
    return BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                         "offsets.topic.num.partitions": "1", **keys})


async def _matrix(tmp_path) -> tuple[list[str], dict[str, Any]]:
    broker = Broker(_config(tmp_path, **{"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ADMIN}))
    await broker.start()
    try:
        node = Node(broker)
        created = await node.call(ADMIN, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
            for name in (TOPIC, "t-doomed")]), 5)
        assert [t.error_code for t in created.topics] == [0, 0]
        granted = await node.call(ADMIN, CreateAclsRequest(creations=[
            _acl(TOPIC_RT, TOPIC), _acl(TOPIC_RT, "t-new"), _acl(TOPIC_RT, "t-created"), _acl(TOPIC_RT, "t-doomed"),
            _acl(GROUP_RT, GROUP), _acl(TXN_RT, TXN), _acl(CLUSTER_RT, "kafka-cluster")]), 2)
        assert [r.error_code for r in granted.results] == [0] * 7
        mismatches = []
        for name, request, version, error_of, refusal in CASES:
            bob = error_of(await node.call(BOB, request(), version))
            alice = error_of(await node.call(ALICE, request(), version))
            if bob != refusal or alice in AUTHORIZATION_ERRORS:
                mismatches.append(f"{name}: bob got {E(bob).name} (expected {E(refusal).name}), alice {E(alice).name}")
        listing = {who: await node.call(who, MetadataRequest(topics=None), 9) for who in (BOB, ALICE, ADMIN)}
        # a forwarded request with items allowed and refused: the allowed go to the controller
        await node.call(ADMIN, CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=TOPIC_RT, resource_name="carol-", resource_pattern_type=4, principal=CAROL, host="*",
            operation=5, permission_type=ALLOW)]), 2)
        mixed = await node.call(CAROL, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
            for name in ("x-refused", "carol-a", "carol-b")]), 5)
        listing["carol"] = mixed
        return mismatches, listing
    finally:
        await broker.stop()


def test_each_api_refuses_a_principal_without_the_acl_and_serves_one_with_it(tmp_path):
    mismatches, listing = asyncio.run(_matrix(tmp_path))
    assert not mismatches, "\n".join(mismatches)
    # Metadata for all topics leaves out those the principal may not describe
    assert [t.name for t in listing[BOB].topics] == []
    assert {t.name for t in listing[ALICE].topics} >= {TOPIC}
    # what alice was allowed happened: Metadata auto-created a topic, DeleteTopics deleted one
    assert {t.name for t in listing[ADMIN].topics} >= {TOPIC, "t-new"}
    assert "t-doomed" not in {t.name for t in listing[ADMIN].topics}
    # carol may create topics prefixed carol- only: one CreateTopics, two created, one refused
    assert sorted((t.name, t.error_code) for t in listing["carol"].topics) == [
        ("carol-a", 0), ("carol-b", 0), ("x-refused", E.TOPIC_AUTHORIZATION_FAILED)]


async def _without_authorizer(tmp_path) -> list[str]:
    broker = Broker(_config(tmp_path))
    await broker.start()
    try:
        node = Node(broker)
        await node.call(BOB, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)]), 5)
        refused = []
        for name, request, version, error_of, _ in CASES:
            code = error_of(await node.call(BOB, request(), version))
            if name in ("CreateAcls", "DeleteAcls", "DescribeAcls"):
                if code != E.SECURITY_DISABLED:
                    refused.append(f"{name}: {E(code).name}, not SECURITY_DISABLED")
            elif code in AUTHORIZATION_ERRORS:
                refused.append(f"{name}: {E(code).name}")
        return refused
    finally:
        await broker.stop()


def test_without_an_authorizer_nothing_is_refused_and_the_acl_apis_say_security_is_disabled(tmp_path):
    refused = asyncio.run(_without_authorizer(tmp_path))
    assert not refused, "\n".join(refused)
