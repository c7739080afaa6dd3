"""The layer table of DESIGN.md, enforced: a package imports only the layers below it.

Allowed imports are the table's "may import" column closed transitively (storage may import
records, records may import protocol, so storage may import protocol too).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "src" / "gregor"

MAY_IMPORT = {
    "protocol": set(),
    "records": {"protocol"},
    "storage": {"records"},
    "metadata": {"protocol"},
    "raft": {"storage", "protocol"},
    "controller": {"metadata", "raft"},
    "replication": {"storage", "metadata"},
    "coordinator": {"storage", "records", "metadata"},
    "broker": {"protocol", "records", "storage", "metadata", "raft", "controller", "replication",
               "coordinator"},
    "client": {"protocol", "records"},
    "spark": {"client"},
    "console": {"client"},
}


def _closure(package: str) -> set[str]:
    allowed: set[str] = set()
    pending = list(MAY_IMPORT.get(package, ()))
    while pending:
        layer = pending.pop()
        if layer not in allowed:
            allowed.add(layer)
            pending.extend(MAY_IMPORT.get(layer, ()))
    return allowed | {package}


def _imported_layers(path: pathlib.Path) -> set[tuple[str, int]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "gregor" and len(parts) > 1:
                found.add((parts[1], node.lineno))
    return found


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_package_imports_only_lower_layers(package: str) -> None:
    allowed = _closure(package)
    violations = []
    for path in sorted((SOURCE / package).rglob("*.py")):
        for layer, line in sorted(_imported_layers(path)):
            if layer not in allowed:
                violations.append(f"{path.relative_to(SOURCE)}:{line} imports gregor.{layer}")
    assert not violations, "\n".join(violations)


def test_every_package_is_in_the_table() -> None:
    packages = {path.name for path in SOURCE.iterdir() if (path / "__init__.py").exists()}
    assert packages - set(MAY_IMPORT) <= {"cli", "metrics"}


COMPOSITION_ROOT = "gregor.broker.server"
ENTRY_POINTS = {"cli/server.py"}


def _imports_of(path: pathlib.Path) -> set[tuple[str, int]]:
    """Every module `path` imports, under TYPE_CHECKING and inside functions too."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            package = ["gregor", *path.relative_to(SOURCE).parent.parts]
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add((module, node.lineno))
            found.update((f"{module}.{alias.name}", node.lineno) for alias in node.names)
    return found


def test_only_the_entry_point_imports_the_broker_composition_root() -> None:
    """Handlers and components get narrow services (`gregor.broker.services`), never the Broker
    that wires them: importing `broker.server` would hand them all of it and close a cycle."""
    violations = [f"{path.relative_to(SOURCE)}:{line} imports {name}"
                  for path in sorted(SOURCE.rglob("*.py"))
                  if str(path.relative_to(SOURCE)) not in ENTRY_POINTS | {"broker/server.py"}
                  for name, line in sorted(_imports_of(path))
                  if name == COMPOSITION_ROOT or name.startswith(COMPOSITION_ROOT + ".")]
    assert not violations, "\n".join(violations)
