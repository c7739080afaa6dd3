"""Fault runs against a cluster of real Gregor processes, checked as Jepsen checks Kafka.

    python scripts/faults.py --seconds 300 --faults kill,pause,partition-leader --plot run.png
    python scripts/faults.py --cycles 100 --faults partition-leader,partition-controller,partition-client
    python scripts/faults.py --controllers 3 --faults partition-quorum,kill --seconds 120
    python scripts/faults.py --workload txn --seconds 120 --faults kill,pause,partition-leader
    python scripts/faults.py --check history.jsonl [--plot history.png]   # check a saved history

What it starts, in a temporary directory (kept with `--keep`): `--controllers` controller-only
voters and `--brokers` brokers, each a `gregor server` process on a loopback port, every listener
behind a userspace TCP proxy (tools/faults/proxy.py) that the nodes advertise; a topic of
`--partitions` partitions, replication factor 3, min.insync.replicas=2.

The workload is Jepsen's Kafka queue workload: `--producers` idempotent acks=all librdkafka
producers write unique integers at `--rate` records/s each; `--group-consumers` consumers in one
group and `--readers` assign-mode readers read along. Every operation goes to the history (invoke,
then ok / fail / info, with times, offsets and values). Faults, one at a time, each lasting a few
seconds with a healthy pause between: kill (kill -9, restart), pause (SIGSTOP/SIGCONT),
partition-leader (a leader cut from its followers), isolate-leader (a leader cut from every other
node, clients still reaching it), partition-controller (the active controller
cut from a broker), partition-client (the clients cut from a leader), partition-quorum (the active
controller cut from the other voters; needs --controllers 3), slow (a link delayed). Afterwards
every link heals, every node runs, the ISR is full again, the producers drain, and a final reader
reads every partition to its end.

`--workload txn` is Jepsen's Kafka transactional workload instead: `--producers` librdkafka
transactional producers, each transaction a poll of its own read_committed reader and unique values
written to several partitions, committed, or aborted on purpose (`--abort-ratio`); the consumers
read with isolation.level=read_committed. Its checker (tools/faults/txn_checker.py) adds aborted
reads (G1a), pre-committed reads and cyclic information flow (G1c) to the queue anomalies of the
committed writes, and prints the write cycles Kafka allows (G0-log, G1c-log).

The checker (tools/faults/checker.py) counts lost writes, unseen, duplicates, inconsistent
offsets, non-monotonic sends and polls and poll skips; the script prints the counts and exits 1
if any is not 0. `--history` saves the history (JSON lines), `--plot` draws throughput, latency
and the fault windows on one time axis (PNG, matplotlib).

The partitions are made by the proxy, not by the kernel: unprivileged, so they run in CI. Each
node's proxy names the connecting process from /proc and forwards each direction of a connection
only while that directed link is open; a cut stalls the bytes (the endpoints notice by their own
timeouts), a slow link delays them. A network-namespace variant (veth pairs, `tc netem`, iptables)
would add packet-level loss and reordering and unreachable hosts (SYNs that time out rather than
connections that go silent), but needs root; see docs/faults.md.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, "src"), REPO]


def main(argv: list[str] | None = None) -> int:
    from tools.faults.nemesis import FAULTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None,
                        help="how long faults go on (default 120 s without --cycles; with it, a time limit)")
    parser.add_argument("--cycles", type=int, default=None,
                        help="stop after this many faults (or at --seconds, whichever comes first)")
    parser.add_argument("--faults", default="kill,pause,partition-leader,isolate-leader,partition-controller,"
                                            "partition-client",
                        help=f"comma-separated, taken in turn: {','.join(FAULTS)}")
    parser.add_argument("--seed", type=int, default=None, help="the schedule's seed (printed; replays the choices)")
    parser.add_argument("--controllers", type=int, default=1)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--group-consumers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=1)
    parser.add_argument("--workload", choices=("queue", "txn"), default="queue",
                        help="txn: transactional producers and read_committed consumers")
    parser.add_argument("--abort-ratio", type=float, default=0.2,
                        help="txn: the share of transactions aborted on purpose (0 to 1)")
    parser.add_argument("--rate", type=float, default=100.0,
                        help="records/s per producer (txn: transactions/s per producer)")
    parser.add_argument("--acks", choices=("all", "1"), default="all",
                        help="1: producers without idempotence (acks=1 may lose acknowledged writes, as in Kafka)")
    parser.add_argument("--fault-seconds", type=float, nargs=2, default=(2.0, 6.0), metavar=("MIN", "MAX"))
    parser.add_argument("--rest-seconds", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"))
    parser.add_argument("--history", default=None, help="write the history here (JSON lines)")
    parser.add_argument("--plot", default=None, help="draw the history here (PNG)")
    parser.add_argument("--check", default=None, metavar="HISTORY", help="only check a saved history")
    parser.add_argument("--keep", action="store_true", help="keep the data directories and server logs")
    parser.add_argument("--client-debug", default=None, metavar="CONTEXTS",
                        help="librdkafka debug contexts for the consumers (e.g. metadata,broker,topic), logged "
                             "to stderr: what a stalled consumer saw")
    args = parser.parse_args(argv)

    if not 0 <= args.abort_ratio <= 1:
        parser.error(f"--abort-ratio: {args.abort_ratio} is not between 0 and 1")
    if args.workload == "txn" and args.acks != "all":
        parser.error("--workload txn needs --acks all (transactions are idempotent)")
    if args.check:
        from tools.faults.checker import check
        from tools.faults.history import read
        from tools.faults.txn_checker import check_txn
        ops = read(args.check)
        if args.plot:
            from tools.faults.plot import plot
            plot(ops, args.plot)
        report = check_txn(ops) if any(op["f"] == "txn" for op in ops) else check(ops)
        print(report.summary())
        return 0 if report.valid else 1

    faults = [name.strip() for name in args.faults.split(",") if name.strip()]
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown or not faults:
        parser.error(f"--faults: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(FAULTS)}")
    if "partition-quorum" in faults and args.controllers < 3:
        parser.error("--faults partition-quorum needs --controllers 3")
    from tools.faults.run import Settings, run

    # SIGTERM (a CI timeout, a kill) unwinds like Ctrl-C, so the servers are stopped by PID.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    root = tempfile.mkdtemp(prefix="gregor-faults-")
    seconds = args.seconds if args.seconds is not None or args.cycles is not None else 120.0
    settings = Settings(root=root, seconds=seconds, cycles=args.cycles, faults=faults, seed=seed,
                        brokers=args.brokers, controllers=args.controllers, partitions=args.partitions,
                        producers=args.producers, group_consumers=args.group_consumers, readers=args.readers,
                        rate=args.rate, acks=args.acks, workload=args.workload, abort_ratio=args.abort_ratio,
                        fault_seconds=tuple(args.fault_seconds),
                        rest_seconds=tuple(args.rest_seconds), history_path=args.history, plot_path=args.plot,
                        client_debug=args.client_debug)
    try:
        outcome = run(settings)
    finally:
        if args.keep:
            print(f"faults: data and server logs kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"seed {seed}: {outcome.cycles} fault cycles in {outcome.seconds:.0f} s")
    print(outcome.report.summary())
    print(f"liveness: {len(outcome.stalled)} consumer(s) short of the end {settings.catch_up_seconds:.0f} s "
          f"after healing" + "".join(f"\n  {line}" for line in outcome.stalled))
    return 0 if outcome.valid else 1


if __name__ == "__main__":
    sys.exit(main())
