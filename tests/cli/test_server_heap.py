"""`gregor server` leaves its startup heap out of later garbage collections (`gc.freeze` once it
serves): a full collection over a started broker's objects stopped its event loop for tens of
milliseconds, which every waiting request paid."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tools.ports import free_port

# Runs the real entry point in the main thread (it installs signal handlers); a thread waits until
# the broker answers on its port and its heap is frozen (a minute at most), reports the
# interpreter's frozen object count, and stops it.
_DRIVER = textwrap.dedent("""
    import gc, os, signal, socket, sys, threading, time
    from gregor.cli.main import main

    def report():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        while gc.get_freeze_count() == 0 and time.monotonic() < deadline:  # the port opens before start() returns
            time.sleep(0.05)
        print("frozen", gc.get_freeze_count(), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=report, daemon=True).start()
    sys.exit(main(["server", "--override", f"listeners=PLAINTEXT://127.0.0.1:{sys.argv[1]}",
                   "--override", f"log.dirs={sys.argv[2]}"]))
""")


def test_a_serving_broker_has_frozen_its_startup_heap(tmp_path):
    port = free_port()
    result = subprocess.run([sys.executable, "-c", _DRIVER, str(port), str(tmp_path / "data")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("frozen ")]
    assert int(line.split()[1]) > 10_000  # the modules, config and metadata of a started broker
