"""`gregor cluster start`: an N-broker cluster on this machine for development and demos —
one `gregor server` process per node, loopback ports, a directory per node (cluster_layout) —
kept in the foreground until Ctrl-C or SIGTERM, which stop the brokers, then the controllers.

Exit codes: 0 after a stop asked for by a signal; 1 when the cluster cannot start (a port in use,
a node that exits or a broker that does not register in time; the others are stopped); 2 for
wrong options.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from typing import Callable, Sequence

from gregor.cli import cluster_layout as layout
from gregor.cli import cluster_security
from gregor.cli.cluster_security import SecureCluster
from gregor.cli.common import EXIT_FAILURE, EXIT_OK, ToolError, UsageError, guarded, key_value
from gregor.client import AdminClient, KafkaException
from gregor.client.scram_credentials import UserScramCredentialUpsertion

STOP_GRACE_S = 30.0
POLL_S = 0.2
LOG_TAIL_LINES = 20

EPILOG = """The directory holds one subdirectory per node (server.properties, data/, server.log) and
cluster.properties (the cluster id and shape); starting again on the same --dir restarts that
cluster with its data. Brokers get node ids 1..N and ports P..P+N-1, controllers node ids
101..100+M and the M ports after the brokers'. Ctrl-C or SIGTERM stops the brokers, then the
controllers (a second Ctrl-C kills them).

examples:
  gregor cluster start                                  # 3 brokers on 127.0.0.1:9092-9094, 1 controller
  gregor cluster start --brokers 5 --controllers 3 --dir /tmp/demo --base-port 19092
  gregor cluster start --override min.insync.replicas=2 num.partitions=6
  gregor cluster start --base-port 0                    # any free ports (printed when it is up)
  gregor cluster start --secure --dir /tmp/secure       # SASL_SSL everywhere; writes client.properties

--secure: a CA and node certificates under DIR/tls/, every listener SASL_SSL (PLAIN between the
controllers and the nodes, SCRAM-SHA-512 for clients and between brokers), and the login of the
`client` user in DIR/client.properties (Java's keys, for Gregor's client and --command-config) and
DIR/librdkafka.properties (for confluent-kafka and kcat -F). A cluster keeps the security it was
first started with.
"""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("start", help="run an N-broker cluster on this machine in the foreground",
                                 description="Start a local cluster of separate broker and controller processes "
                                             "on 127.0.0.1 and keep it in the foreground.",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", metavar="N", type=int, default=3, help="brokers (default 3)")
    parser.add_argument("--controllers", metavar="M", type=int, default=1,
                        help="controllers, the metadata quorum's voters (default 1; 3 survive the loss of one)")
    parser.add_argument("--dir", metavar="DIR", default="cluster-data",
                        help="where the nodes keep config, data and logs (default ./cluster-data)")
    parser.add_argument("--base-port", metavar="P", type=int, default=9092,
                        help="first port: brokers on P.., controllers after them (default 9092; 0: free ports)")
    parser.add_argument("--override", metavar="KEY=VALUE", type=key_value, nargs="+", action="extend", default=[],
                        help="a server config for every node, e.g. min.insync.replicas=2 (repeatable)")
    parser.add_argument("--secure", action="store_true",
                        help="TLS and SASL on every listener, with generated certificates and users (see below)")
    parser.add_argument("--timeout", metavar="MS", type=int, default=60000,
                        help="how long the cluster may take to come up, in ms (default 60000)")
    parser.set_defaults(run=run_start)


@guarded("cluster")
def run_start(args: argparse.Namespace) -> int:
    root = os.path.abspath(args.dir)
    _check_counts(args)
    overrides = dict(args.override)
    layout.check_overrides(overrides)
    cluster_id = layout.saved_cluster_id(root, args.brokers, args.controllers)
    ports = layout.choose_ports(args.base_port, args.brokers + args.controllers)
    nodes = layout.nodes(root, args.brokers, args.controllers, ports)
    restarted = cluster_id is not None
    cluster_id = cluster_id or layout.new_cluster_id()
    secure = _security(root, nodes, args.secure, restarted)
    layout.check(nodes, cluster_id, overrides, secure)
    layout.check_ports_free(nodes)
    try:
        layout.write(nodes, cluster_id, overrides, secure)
    except OSError as error:
        raise ToolError(f"cannot write the cluster's files under {root}: {error.strerror or error}") from None
    return LocalCluster(nodes, cluster_id, secure).run(restarted, args.timeout / 1000)


def _security(root: str, nodes: list[layout.Node], secure: bool, restarted: bool) -> SecureCluster | None:
    """The --secure material (made on the first start); a restart keeps the cluster's security."""
    was_secure = os.path.isdir(os.path.join(root, cluster_security.TLS_DIR))
    if restarted and was_secure != secure:
        raise ToolError(f"{root} holds a cluster started {'with' if was_secure else 'without'} --secure: start it "
                        f"the same way, or use another --dir")
    if not secure:
        return None
    try:
        return cluster_security.prepare(root, [node.name for node in nodes])
    except OSError as error:
        raise ToolError(f"cannot write the cluster's certificates under {root}: {error.strerror or error}") from None


def _check_counts(args: argparse.Namespace) -> None:
    if not 1 <= args.brokers <= layout.MAX_BROKERS:
        raise UsageError(f"--brokers must be between 1 and {layout.MAX_BROKERS}, got {args.brokers}")
    if not 1 <= args.controllers <= layout.MAX_CONTROLLERS:
        raise UsageError(f"--controllers must be between 1 and {layout.MAX_CONTROLLERS}, got {args.controllers}")
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of ms, got {args.timeout}")


class NodeProcess:
    """One `gregor server --config DIR/<node>/server.properties`, its output appended to server.log."""

    def __init__(self, node: layout.Node) -> None:
        self.node = node
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.node.log_path, "ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} started by gregor cluster start\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gregor.cli.main", "server", "--config", self.node.config_path],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                process_group=0, preexec_fn=_exit_with_parent())  # Ctrl-C reaches the tool, not the nodes

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else -1

    def exit_code(self) -> int | None:
        return self.proc.poll() if self.proc else None

    def listening(self) -> bool:
        try:
            with socket.create_connection((layout.HOST, self.node.port), timeout=0.5):
                return True
        except OSError:
            return False

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        try:
            with open(self.node.log_path, encoding="utf-8", errors="replace") as handle:
                return [line.rstrip("\n") for line in deque(handle, lines)]
        except OSError:
            return []


def _exit_with_parent() -> Callable[[], None] | None:
    """On Linux, have a node receive SIGTERM when the tool dies without stopping it (kill -9),
    so no orphan keeps the cluster's ports."""
    name = ctypes.util.find_library("c")
    if not sys.platform.startswith("linux") or not name:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    pr_set_pdeathsig = 1
    return lambda: libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


class StartupFailed(Exception):
    pass


class LocalCluster:
    def __init__(self, nodes: Sequence[layout.Node], cluster_id: str, secure: SecureCluster | None = None) -> None:
        self.nodes = list(nodes)
        self.cluster_id = cluster_id
        self.secure = secure
        self.client_files = ("", "")  # with --secure: DIR/client.properties, DIR/librdkafka.properties
        self.processes = [NodeProcess(node) for node in nodes]
        self.brokers = [p for p in self.processes if p.node.role == "broker"]
        self.controllers = [p for p in self.processes if p.node.role == "controller"]
        self.stop_requested = False
        self.kill_requested = False

    @property
    def bootstrap(self) -> str:
        return ",".join(p.node.address for p in self.brokers)

    def run(self, restarted: bool, timeout_s: float) -> int:
        previous = {signum: signal.signal(signum, self._on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._run(restarted, timeout_s)
        finally:
            self.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.stop_requested:
            self.kill_requested = True
        self.stop_requested = True

    def _run(self, restarted: bool, timeout_s: float) -> int:
        root = os.path.dirname(self.nodes[0].directory)
        _say(f"{'Restarting' if restarted else 'Starting'} a local cluster of {_count(len(self.brokers), 'broker')} "
             f"and {_count(len(self.controllers), 'controller')} in {root} (cluster id {self.cluster_id})")
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            self._start_and_wait(self.controllers, deadline)
            self._start_and_wait(self.brokers, deadline)
            self._wait_registered(deadline)
            if self.secure is not None and not self.stop_requested:
                self._create_users(deadline)
        except StartupFailed as failure:
            _error(str(failure))
            return EXIT_FAILURE
        if self.stop_requested:
            return EXIT_OK
        _say(f"Cluster ready in {time.monotonic() - started:.1f} s.\n")
        self._print_usage(root)
        return self._supervise()

    def _start_and_wait(self, group: list[NodeProcess], deadline: float) -> None:
        if self.stop_requested:
            return
        for process in group:
            process.start()
        waiting = list(group)
        while waiting and not self.stop_requested:
            self._check_alive(deadline, f"{', '.join(p.node.name for p in waiting)} not listening")
            for process in [p for p in waiting if p.listening()]:
                waiting.remove(process)
                _say(f"  {process.node.name:<16} {process.node.address:<16} pid {process.pid:<8} up")
            time.sleep(POLL_S if waiting else 0)

    def _check_alive(self, deadline: float, waiting_for: str) -> None:
        for process in self.processes:
            code = process.exit_code()
            if code is not None:
                tail = "\n".join(f"    {line}" for line in process.log_tail())
                raise StartupFailed(f"{process.node.name} exited with code {code} while the cluster was starting "
                                    f"(log: {process.node.log_path}); its last lines:\n{tail}")
        if time.monotonic() > deadline:
            raise StartupFailed(f"the cluster did not come up in time ({waiting_for}); see the server.log of "
                                f"each node under {os.path.dirname(self.nodes[0].directory)} (or raise --timeout)")

    def _wait_registered(self, deadline: float) -> None:
        """Until DescribeCluster, which lists the unfenced brokers, lists them all."""
        wanted = {p.node.node_id for p in self.brokers}
        shown = -1
        with AdminClient({**self._admin_config(), "default.api.timeout.ms": 2000}) as admin:
            while not self.stop_requested:
                try:
                    registered = wanted & {node.node_id for node in admin.describe_cluster(timeout=2).nodes}
                except KafkaException:
                    registered = set()
                if len(registered) != shown:
                    shown = len(registered)
                    _say(f"  brokers registered and unfenced: {shown} of {len(wanted)}")
                if registered == wanted:
                    return
                self._check_alive(deadline, f"{shown} of {len(wanted)} brokers registered")
                time.sleep(POLL_S)

    def _admin_config(self) -> dict[str, str]:
        if self.secure is None:
            return {"bootstrap.servers": self.bootstrap}
        return self.secure.admin_config(self.bootstrap)

    def _create_users(self, deadline: float) -> None:
        """SCRAM credentials of `broker` (followers fetch with it) and `client`, created as `admin`
        (upserts: a restart sets the same passwords again), then the client's files, written once
        a SCRAM login works."""
        assert self.secure is not None
        upserts = [UserScramCredentialUpsertion(user, cluster_security.SCRAM, self.secure.passwords[user])
                   for user in ("broker", "client")]
        with AdminClient({**self._admin_config(), "default.api.timeout.ms": 10000}) as admin:
            failed = {user: error for user, error in admin.alter_user_scram_credentials(upserts).items() if error}
        if failed:
            raise StartupFailed(f"cannot create the SCRAM users: {failed}")
        config = {**self.secure.client_config(self.bootstrap), "default.api.timeout.ms": "2000"}
        while not self.stop_requested:
            try:
                with AdminClient(config) as admin:
                    admin.describe_cluster(timeout=2)
                break
            except KafkaException:
                self._check_alive(deadline, "the client user cannot log in yet")
                time.sleep(POLL_S)
        self.client_files = self.secure.write_client_files(self.bootstrap)
        _say("  SCRAM users created: broker, client")

    def _print_usage(self, root: str) -> None:
        factor = min(3, len(self.brokers))
        login = ""
        tool_flags = ""
        if self.secure is not None:
            java, librdkafka = self.client_files
            login = (f"Every listener is SASL_SSL. The client login (user client, {cluster_security.SCRAM}):\n"
                     f"  {java} (Gregor's client; --command-config of the tools)\n"
                     f"  {librdkafka} (confluent-kafka, kcat -F)\n\n")
            tool_flags = f" --command-config {java}"
        kcat = f"kcat -F {self.client_files[1]}" if self.secure is not None else f"kcat -b {self.bootstrap}"
        _say(f"Bootstrap servers: {self.bootstrap}\n\n{login}"
             f"Try:\n"
             f"  gregor topics --bootstrap-server {self.bootstrap}{tool_flags} --create --topic demo "
             f"--partitions 6 --replication-factor {factor}\n"
             f"  gregor cluster status --bootstrap-server {self.bootstrap}{tool_flags}\n"
             f"  {kcat} -L\n\n"
             f"Config, data and server.log of each node under {root}/<node>/. "
             f"Press Ctrl-C to stop the cluster.")

    def _supervise(self) -> int:
        """Report a node that exits (a demo may kill one on purpose) and carry on until a signal."""
        reported: set[int] = set()
        while not self.stop_requested:
            for process in self.processes:
                code = process.exit_code()
                if code is not None and process.node.node_id not in reported:
                    reported.add(process.node.node_id)
                    _error(f"{process.node.name} (pid {process.pid}) exited with code {code}; the other nodes "
                           f"keep running. Its log: {process.node.log_path}")
            if len(reported) == len(self.processes):
                _error("every node has exited")
                return EXIT_FAILURE
            time.sleep(POLL_S)
        return EXIT_OK

    def stop(self) -> None:
        """Brokers first (each hands its partition leaderships over), then the controllers."""
        for role, group in (("broker", self.brokers), ("controller", self.controllers)):
            running = [p for p in group if p.exit_code() is None]
            if not running:
                continue
            _say(f"Stopping {_count(len(running), role)} ...")
            for process in running:
                process.terminate()
            deadline = time.monotonic() + STOP_GRACE_S
            while any(p.exit_code() is None for p in running):
                if self.kill_requested or time.monotonic() > deadline:
                    for process in running:
                        process.kill()
                    break
                time.sleep(POLL_S / 2)
        if any(p.proc for p in self.processes):
            _say("Stopped.")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def _say(text: str) -> None:
    """Progress on stdout; a reader that went away (`| head`) does not stop the cluster or its shutdown."""
    try:
        print(text, flush=True)
    except OSError:
        pass


def _error(text: str) -> None:
    print(f"gregor cluster: error: {text}", file=sys.stderr, flush=True)
