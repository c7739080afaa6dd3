"""One random schedule: chaos for a while, then a healed cluster that must converge.

Converged means: every broker running, unfenced and in the ISR, all logs identical, the leader's
high watermark at its log end, and a new acks=all produce acknowledged.
"""

from __future__ import annotations

from gregor.protocol.error_codes import ErrorCode

from tests.sim.replication.cluster import BROKERS, Cluster, Faults

CHAOS_TICK_MS = 10
SETTLE_MS = 20_000


def chaos_step(cluster: Cluster) -> None:
    """The random faults and workload of one tick."""
    rng, faults = cluster.rng, cluster.faults
    if rng.random() < faults.produce_rate:
        cluster.produce(-1 if rng.random() < faults.acks_all_share else 1)
    if rng.random() < faults.crash_rate:
        lossy = faults.lossy_crashes and rng.random() < 0.5
        cluster.crash(rng.choice(BROKERS), rng.randrange(20, 1500), lose_unflushed=lossy,
                      torn=lossy and rng.random() < 0.5)
    if rng.random() < faults.pause_rate:
        cluster.pause(rng.choice(BROKERS), rng.randrange(50, 1000))
    if rng.random() < faults.partition_rate:
        if cluster.blocked:
            cluster.heal()
        else:
            nodes = [0, *BROKERS]
            shuffled = rng.sample(nodes, len(nodes))
            cut = rng.randrange(1, len(nodes))
            cluster.partition_network(set(shuffled[:cut]), set(shuffled[cut:]))
    if rng.random() < 0.2:
        cluster.probe_early_tick(rng.choice(BROKERS))


def run_schedule(cluster: Cluster, chaos_ms: int) -> Cluster:
    """Run one seeded schedule; raises InvariantViolation (with seed and trace) on a broken property."""
    cluster.replay += f" REPLICATION_SIM_CHAOS_MS={chaos_ms}"

    def tick() -> None:
        if cluster.now < chaos_ms:
            chaos_step(cluster)
            cluster.at(cluster.now + CHAOS_TICK_MS, tick)

    cluster.at(CHAOS_TICK_MS, tick)
    cluster.run_until(chaos_ms)
    settle(cluster)
    return cluster


def converged(cluster: Cluster) -> bool:
    leader = cluster.leader()
    if leader is None or sorted(cluster.controller.state.isr) != list(BROKERS):
        return False
    end = leader.log.log_end_offset
    if leader.partition.high_watermark != end:
        return False
    batches = leader.view.refresh(leader.log).batches
    return all(b.alive and b.log.log_end_offset == end and b.view.refresh(b.log).batches == batches
               for b in cluster.brokers.values())


def settle(cluster: Cluster) -> None:
    """Heal everything and restart the dead; the cluster must converge and take an acks=all produce."""
    cluster.faults = Faults(max_delay_ms=cluster.faults.max_delay_ms)
    cluster.heal()
    for broker_id, broker in cluster.brokers.items():
        if not broker.alive:
            cluster.restart(broker_id)
    deadline = cluster.now + SETTLE_MS
    while True:
        if not cluster.run_until(deadline, lambda: converged(cluster)):
            cluster.fail("the healed cluster did not converge")
        token = cluster.produce(-1)
        answered = cluster.run_until(min(deadline, cluster.now + 2_000), lambda: token in cluster.answers)
        if answered and cluster.answers[token] == ErrorCode.NONE:
            break
        if cluster.now >= deadline:
            cluster.fail(f"an acks=all produce after healing was not acknowledged: {cluster.answers.get(token)}")
    if not cluster.run_until(deadline, lambda: converged(cluster)):
        cluster.fail("the cluster did not replicate the last produce")
    for broker in cluster.brokers.values():
        cluster.check_acknowledged_survive(broker)
        cluster.check_transaction_state(broker)
