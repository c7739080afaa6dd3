"""Shared fixtures: a real `gregor server` process per test module. Also: how the suite is split
over pytest-xdist workers (scripts/test.sh runs it with `-n`), and a bytecode cache for the many
Python processes the tests start."""

from __future__ import annotations

import itertools
import os
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

from tests.broker_process import BrokerProcess

# Property tests draw their examples from a seed each test fixes (derandomize), so that a run of
# the suite is repeatable and CI judges the code, not the draw. `HYPOTHESIS_PROFILE=default` draws
# fresh examples each run (and keeps failures in .hypothesis/) to look for new counterexamples;
# one it finds is pinned with `@example`. Neither profile times the examples (no deadline, no
# too_slow health check): on a loaded 2-core machine those judge the machine, and failed there
# for drawing one subscription in a second.
settings.register_profile("repeatable", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Every broker, tool, Spark worker and demo process the suite starts imports gregor; with
# PYTHONDONTWRITEBYTECODE set each of them would compile it again (the generated protocol module
# alone takes about a second). Their bytecode goes to a cache outside the repository instead.
_PYCACHE = os.path.join(tempfile.gettempdir(), "gregor-tests-pycache")
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", _PYCACHE)
if sys.pycache_prefix is None:
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
sys.dont_write_bytecode = False


# How scripts/test.sh splits the suite over pytest-xdist workers (`-n N --dist loadscope`): a work
# unit is what must run in one worker process. That is a test module (its tests share module-scoped
# fixtures such as a broker), except
# - tests/spark: one unit, so that a single worker starts the Spark session (a JVM) for all of it;
# - tests/cli: one unit, for its package-scoped broker;
# - the seeded-schedule modules of tests/sim, whose chunks share nothing: each test is a unit.
# Units are handed out longest first (by where they live, slow-marked tests first), so that no long
# unit starts while the other workers are running out of work, and the CPU-bound simulation chunks
# alternate with the rest, so that they keep the cores busy while real processes wait on sockets.
_SHARED_BY_PACKAGE = ("tests/spark/", "tests/cli/")
_SPREAD_BY_TEST = ("tests/sim/raft/test_random_schedules.py", "tests/sim/replication/test_random_schedules.py")
_LONGEST_FIRST = ("tests/spark/", "tests/chaos/", "tests/faults/", "tests/cluster/", "tests/console/", "tests/interop/",
                  "tests/client/", "tests/cli/")
_CPU_BOUND = "tests/sim/"


def work_unit(nodeid: str) -> str:
    module = nodeid.split("::")[0]
    if module in _SPREAD_BY_TEST:
        return nodeid
    return next((package for package in _SHARED_BY_PACKAGE if module.startswith(package)), module)


def _rank(units: list[pytest.Item]) -> tuple[int, int]:
    nodeid = units[0].nodeid
    place = next((index for index, prefix in enumerate(_LONGEST_FIRST) if nodeid.startswith(prefix)),
                 len(_LONGEST_FIRST))
    return place, 0 if any(item.get_closest_marker("slow") is not None for item in units) else 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: the collection in work units, in the order they are to be handed out
    (the controller follows the workers' collection order, given --no-loadscope-reorder)."""
    if getattr(config, "workerinput", None) is None:
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)
    cpu_bound = sorted((unit for unit in units.values() if unit[0].nodeid.startswith(_CPU_BOUND)), key=_rank)
    rest = sorted((unit for unit in units.values() if not unit[0].nodeid.startswith(_CPU_BOUND)), key=_rank)
    ordered = rest[:1]
    for pair in itertools.zip_longest(cpu_bound, rest[1:]):
        ordered += [unit for unit in pair if unit is not None]
    items[:] = [item for unit in ordered for item in unit]


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a hook of pytest-xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return WorkUnitScheduling(config, log)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor") / "data"),
                            {"message.max.bytes": "200000"})
    process.start()
    yield process
    process.stop()


@pytest.fixture
def broker_factory(tmp_path):
    started = []

    def make(overrides=None):
        process = BrokerProcess(str(tmp_path / f"data{len(started)}"), overrides)
        process.start()
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()
