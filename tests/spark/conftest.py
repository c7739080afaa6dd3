"""One local SparkSession for the whole tests/spark run (the JVM takes seconds to start), the
`gregor` format registered, and helpers to make topics and produce known records."""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import sys
import warnings

import pytest

from gregor.client import AdminClient, Producer
from gregor.client.admin import NewTopic


def _missing() -> str | None:
    for module in ("pyspark", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[test]')"
    if shutil.which("java") is None:
        return "Spark needs a Java runtime (17+); scripts/setup.sh --test installs one"
    return None


MISSING = _missing()
if MISSING is not None:
    warnings.warn(f"tests/spark not collected: {MISSING}")
    collect_ignore_glob = ["test_*.py"]

_names = itertools.count()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import gregor.spark

    session = (SparkSession.builder.master("local[2]").appName("gregor-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.stopTimeout", "10s")
               .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    gregor.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def admin(broker):
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    yield client
    client.close()


@pytest.fixture
def new_topic(admin, request):
    """Create a fresh topic: new_topic(partitions=1) -> name."""

    def make(partitions: int = 1, **config: str) -> str:
        name = f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{next(_names)}"
        result = admin.create_topics([NewTopic(name, partitions, 1, config=config)])
        assert not isinstance(result[name], Exception), result[name]
        return name

    return make


@pytest.fixture(scope="module")
def producer(broker):
    with Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0}) as client:
        yield client


def produce(producer: Producer, topic: str, records: list[dict]) -> list[dict]:
    """Send records (dicts of value, key, partition, timestamp, headers) and return them with the
    offset, partition and timestamp the broker gave each."""
    futures = [producer.send(topic, record.get("value"), key=record.get("key"), partition=record.get("partition"),
                             timestamp=record.get("timestamp"), headers=record.get("headers"))
               for record in records]
    producer.flush(30)
    result = []
    for record, future in zip(records, futures):
        metadata = future.get(30)
        result.append({**record, "topic": topic, "partition": metadata.partition, "offset": metadata.offset,
                       "timestamp": metadata.timestamp})
    return result
