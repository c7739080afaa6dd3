"""`gregor cluster status`: the cluster at a glance — brokers, the active controller, the metadata
quorum (as `kafka-metadata-quorum.sh describe --status --replication` shows it) and the
partitions that need attention (under-replicated and offline ones, as `kafka-topics.sh
--describe --under-replicated-partitions / --unavailable-partitions` list them).

Exit code 0 when the status could be read, 1 when the cluster cannot be reached; with
`--fail-on-unhealthy`, also 3 when a partition is offline or under-replicated, for scripts and
health checks. `gregor cluster start` (a local cluster of processes) is in cluster_start.
"""

from __future__ import annotations

import argparse

from gregor.cli import cluster_start
from gregor.cli.common import add_connection_options, add_tool, guarded, open_admin, print_table
from gregor.client import AdminClient, KafkaException
from gregor.client.admin import QuorumInfo

EXIT_UNHEALTHY = 3

STATUS_EPILOG = """examples:
  gregor cluster status --bootstrap-server localhost:9092
  gregor cluster status --bootstrap-server localhost:9092 --fail-on-unhealthy && echo healthy
"""

EPILOG = STATUS_EPILOG.replace("examples:\n", "examples:\n  gregor cluster start --brokers 3 "
                                                "                 # a local cluster (see its --help)\n")


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "cluster", "run a local cluster; a cluster's brokers, quorum and partition health",
                      "Start a local multi-process cluster, or show a cluster's brokers, controller, metadata "
                      "quorum and unhealthy partitions.", EPILOG)
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    status = commands.add_parser("status", help="brokers, controller, quorum, under-replicated and offline partitions",
                                 description="Show the cluster's status.", epilog=STATUS_EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_connection_options(status)
    status.add_argument("--fail-on-unhealthy", action="store_true",
                        help=f"exit {EXIT_UNHEALTHY} when a partition is offline or under-replicated")
    status.set_defaults(run=run_status)
    cluster_start.add_parser(commands)


@guarded("cluster")
def run_status(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        cluster = admin.describe_cluster()
        quorum = _quorum(admin)
        topics = admin.describe_topics(list(admin.list_topics(internal=True)))
    print(f"ClusterId:            {cluster.cluster_id}")
    print(f"Controller:           {cluster.controller.node_id if cluster.controller else 'none'}")
    print(f"Brokers:              {len(cluster.nodes)}")
    print_table([(node.node_id, f"{node.host}:{node.port}", node.rack or "") for node in cluster.nodes],
                ["BROKER", "ENDPOINT", "RACK"])
    print()
    _print_quorum(quorum)
    unhealthy = []
    partitions = 0
    for name, topic in sorted(topics.items()):
        if isinstance(topic, KafkaException):
            continue
        for partition in topic.partitions:
            partitions += 1
            if partition.leader < 0:
                unhealthy.append((name, partition.partition, "offline", partition))
            elif len(partition.isr) < len(partition.replicas):
                unhealthy.append((name, partition.partition, "under-replicated", partition))
    offline = sum(1 for entry in unhealthy if entry[2] == "offline")
    print()
    print(f"Partitions:           {partitions}")
    print(f"UnderReplicated:      {len(unhealthy) - offline}")
    print(f"Offline:              {offline}")
    if unhealthy:
        print_table([(name, index, state, partition.leader, ",".join(map(str, partition.replicas)),
                      ",".join(map(str, partition.isr))) for name, index, state, partition in unhealthy],
                    ["TOPIC", "PARTITION", "STATE", "LEADER", "REPLICAS", "ISR"])
    return EXIT_UNHEALTHY if unhealthy and args.fail_on_unhealthy else 0


def _quorum(admin: AdminClient) -> QuorumInfo | None:
    """The metadata quorum, or None from a cluster whose brokers do not answer DescribeQuorum."""
    try:
        return admin.describe_metadata_quorum()
    except KafkaException as error:
        if error.name == "UNSUPPORTED_VERSION":
            return None
        raise


def _print_quorum(quorum: QuorumInfo | None) -> None:
    if quorum is None:
        print("MetadataQuorum:       not described by this cluster (no DescribeQuorum)")
        return
    leader_end = next((v.log_end_offset for v in quorum.voters if v.replica_id == quorum.leader_id), -1)
    print(f"LeaderId:             {quorum.leader_id}")
    print(f"LeaderEpoch:          {quorum.leader_epoch}")
    print(f"HighWatermark:        {quorum.high_watermark}")
    print_table([(replica.replica_id, replica.log_end_offset, max(leader_end - replica.log_end_offset, 0), status)
                 for replicas, status in ((quorum.voters, "Voter"), (quorum.observers, "Observer"))
                 for replica in replicas],
                ["NODE", "LOG-END-OFFSET", "LAG", "STATUS"])
