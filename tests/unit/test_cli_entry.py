"""`gregor <tool>` imports only its tool: a broker started by it does not load the client, and a
client tool does not load the broker (each is about half a second of imports per process)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from gregor.cli.main import TOOLS, build_parser


def _modules_after(tool: str) -> list[str]:
    """The gregor modules a fresh interpreter holds after building the parser for `tool`."""
    code = ("import json, sys; from gregor.cli.main import build_parser; build_parser(sys.argv[1]); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('gregor.'))))")
    result = subprocess.run([sys.executable, "-c", code, tool], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(result.stdout)


def test_a_broker_run_does_not_import_the_client() -> None:
    modules = _modules_after("server")
    assert "gregor.cli.server" in modules
    assert not [m for m in modules if m.startswith("gregor.client.") and m not in ("gregor.client.config",
                                                                                  "gregor.client.errors")]


def test_a_client_tool_does_not_import_the_broker_or_the_other_tools() -> None:
    modules = _modules_after("topics")
    assert "gregor.client.admin" in modules
    assert not [m for m in modules if m.startswith(("gregor.broker", "gregor.coordinator", "gregor.controller"))]
    assert not [m for m in modules if m.startswith("gregor.cli.") and m not in (
        "gregor.cli.main", "gregor.cli.common", "gregor.cli.topics")]


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_each_module_registers_the_tool_it_is_named_for(tool: str) -> None:
    parser = build_parser(tool)
    tools = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    assert list(tools.choices) == [tool]


def test_the_full_parser_lists_every_tool_in_order() -> None:
    parser = build_parser()
    tools = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    assert list(tools.choices) == list(TOOLS)
