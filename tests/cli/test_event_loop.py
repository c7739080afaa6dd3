"""`GREGOR_EVENT_LOOP`: uvloop by default where installed, asyncio on request, anything else refused
with one line (and `gregor server` exits 2 on it before touching its data directory)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gregor.cli import event_loop


@pytest.mark.parametrize("value, expected", [(None, "uvloop"), ("asyncio", "asyncio"), ("uvloop", "uvloop"),
                                             (" UVLOOP ", "uvloop")])
def test_the_chosen_loop(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(event_loop.ENVIRONMENT_KEY, raising=False)
    else:
        monkeypatch.setenv(event_loop.ENVIRONMENT_KEY, value)
    assert event_loop.chosen_loop() == expected


def test_a_missing_uvloop_falls_back_unless_insisted_on(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import fails
    monkeypatch.delenv(event_loop.ENVIRONMENT_KEY, raising=False)
    assert event_loop.chosen_loop() == "asyncio"
    monkeypatch.setenv(event_loop.ENVIRONMENT_KEY, "uvloop")
    with pytest.raises(event_loop.EventLoopError, match="not installed"):
        event_loop.chosen_loop()


def test_server_refuses_an_unknown_loop(tmp_path):
    result = subprocess.run([sys.executable, "-m", "gregor.cli.main", "server", "--override", f"log.dirs={tmp_path}/d"],
                            env={**__import__("os").environ, event_loop.ENVIRONMENT_KEY: "trio"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == "gregor server: GREGOR_EVENT_LOOP='trio': choose one of uvloop, asyncio"
    assert not (tmp_path / "d").exists()
