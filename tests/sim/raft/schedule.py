"""One random schedule: chaos for a while, then a healed network that must elect and commit."""

from __future__ import annotations

from tests.sim.raft.cluster import Cluster, Faults

CHAOS_TICK_MS = 10
SETTLE_MS = 20_000


def chaos_step(cluster: Cluster) -> None:
    """The random faults and workload of one tick."""
    rng, faults, nodes = cluster.rng, cluster.faults, sorted(cluster.nodes)
    leader = cluster.leader()
    if leader is not None and rng.random() < faults.append_rate:
        cluster.append(leader)
    if rng.random() < faults.crash_rate:
        cluster.crash(rng.choice(nodes), rng.randrange(50, 2000))
    if rng.random() < faults.pause_rate:
        cluster.pause(rng.choice(nodes), rng.randrange(50, 1500))
    if rng.random() < faults.partition_rate:
        if cluster.blocked:
            cluster.heal()
        else:
            shuffled = rng.sample(nodes, len(nodes))
            cut = rng.randrange(1, len(nodes))
            cluster.partition(set(shuffled[:cut]), set(shuffled[cut:]))
    if rng.random() < faults.snapshot_rate:
        cluster.snapshot(rng.choice(nodes))
    if rng.random() < 0.2:
        cluster.probe_early_poll(rng.choice(nodes))


def run_schedule(seed: int, voters: int, chaos_ms: int) -> Cluster:
    """Run one seeded schedule; raises InvariantViolation (with seed and trace) on a broken property."""
    cluster = Cluster(seed, voters=voters, observers=seed % 2)
    cluster.replay += f" RAFT_SIM_CHAOS_MS={chaos_ms}"

    def tick() -> None:
        if cluster.now < chaos_ms:
            chaos_step(cluster)
            cluster.at(cluster.now + CHAOS_TICK_MS, tick)

    cluster.at(CHAOS_TICK_MS, tick)
    cluster.run_until(chaos_ms)
    settle(cluster)
    return cluster


def settle(cluster: Cluster) -> None:
    """Heal everything; a leader must appear and commit a new value on every node.

    A value the leader appended can still be lost when it loses its leadership before the value
    commits (nothing was acknowledged), so the value is appended again at the next leader.
    """
    cluster.faults = Faults(max_delay_ms=cluster.faults.max_delay_ms)
    cluster.heal()
    deadline = cluster.now + SETTLE_MS
    everyone = cluster.nodes.values()
    while True:
        if not cluster.run_until(deadline, lambda: cluster.leader() is not None and
                                 all(n.client is not None for n in everyone)):
            cluster.fail("no leader after the network healed")
        leader = cluster.leader()
        offset = cluster.append(leader)
        if offset is None:
            cluster.run_until(min(deadline, cluster.now + CHAOS_TICK_MS))
            continue
        node = cluster.nodes[leader]
        incarnation = node.incarnation
        committed = cluster.run_until(deadline, lambda: all(n.client is not None and n.applied_offset > offset
                                                            for n in everyone) or
                                      node.incarnation != incarnation or not node.client.is_leader)
        if not committed:
            cluster.fail(f"offset {offset} was not committed everywhere after the network healed")
        if all(n.client is not None and n.applied_offset > offset for n in everyone):
            break
    cluster.check_state_machines()
