"""Produce and consume throughput over PLAINTEXT, SSL and SASL_SSL, in the same run, with librdkafka.

    .venv/bin/python benchmarks/security_throughput.py                  # 500,000 x 100 B, 100,000 x 1 KB
    .venv/bin/python benchmarks/security_throughput.py --records 200000 --sizes 100

One `gregor server` serves three listeners at once (certificates made with the `openssl` command
line in a temporary directory; SASL_SSL logs in with SCRAM-SHA-512, created over the plaintext
listener). For each record size and listener, one producer (acks=1, librdkafka's default batching)
sends the records to a new one-partition topic, then one consumer reads them back, as
benchmarks/throughput.py does. It prints records/s and MB/s per phase and each listener's share of
the plaintext figure. Plaintext fetches leave the broker with sendfile; over TLS the event loop
reads and encrypts the file data.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from confluent_kafka.admin import (  # noqa: E402
    AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
)
from throughput import Figures, consume, create_topic, free_port, produce, wait_for_port  # noqa: E402


def make_certificates(directory: str) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *curve, "-days", "2", "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=bench CA")
    openssl("req", "-new", *curve, "-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=localhost")
    with open(os.path.join(directory, "broker.ext"), "w") as handle:
        handle.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "broker.ext", "-out", "broker.pem")
    with open(os.path.join(directory, "broker-keystore.pem"), "wb") as out:
        for name in ("broker.key", "broker.pem"):
            with open(os.path.join(directory, name), "rb") as handle:
                out.write(handle.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=None, help="records per run (default 500,000 of "
                                                                  "100 B, 100,000 of 1 KB)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000], help="record sizes in bytes")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="gregor-bench-tls-")
    make_certificates(directory)
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_SSL")}
    log = open(os.path.join(directory, "server.log"), "wb")
    overrides = {
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "log.dirs": os.path.join(directory, "data"),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": os.path.join(directory, "broker-keystore.pem"),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    }
    command = [sys.executable, "-m", "gregor.cli.main", "server"]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(ports["PLAINTEXT"], process, "gregor server")
        plaintext = f"127.0.0.1:{ports['PLAINTEXT']}"
        admin = AdminClient({"bootstrap.servers": plaintext})
        upsertion = UserScramCredentialUpsertion("bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                                 b"bench-secret")
        for future in admin.alter_user_scram_credentials([upsertion]).values():
            future.result(30)
        ca = os.path.join(directory, "ca.pem")
        clients = {
            "PLAINTEXT": (plaintext, {}),
            "SSL": (f"127.0.0.1:{ports['SSL']}", {"security.protocol": "SSL", "ssl.ca.location": ca}),
            "SASL_SSL": (f"127.0.0.1:{ports['SASL_SSL']}", {
                "security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "bench", "sasl.password": "bench-secret"}),
        }
        rows: list[tuple[int, str, str, Figures]] = []
        for size in args.sizes:
            records = args.records or (500_000 if size <= 100 else 100_000)
            for name, (bootstrap, config) in clients.items():
                topic = f"bench-{name.lower()}-{uuid.uuid4().hex[:8]}"
                create_topic(plaintext, topic, 1)
                print(f"{name}, {records:,} records of {size} B", file=sys.stderr)
                rows.append((size, name, "produce", produce(bootstrap, topic, records, size, config)))
                rows.append((size, name, "consume", consume(bootstrap, topic, 1, records, size, config)))
        print("| record | listener | phase | records/s | MB/s | of PLAINTEXT |")
        print("| --- | --- | --- | ---: | ---: | ---: |")
        base = {(size, phase): figures for size, name, phase, figures in rows if name == "PLAINTEXT"}
        for size, name, phase, figures in rows:
            share = figures.records_per_second / base[(size, phase)].records_per_second
            print(f"| {size} B | {name} | {phase} | {figures.records_per_second:,.0f} | "
                  f"{figures.megabytes_per_second:.1f} | {share:.2f} |")
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
