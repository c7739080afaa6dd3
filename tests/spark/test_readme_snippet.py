"""The README's Spark snippet runs as written (against a test broker) in the shared session and
shows the records already in the topic; `gregor.spark.register` points the workers at this
interpreter unless the user chose one."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

import gregor.spark
from gregor.client import Producer
from tests.docs.readme import against, snippet


def test_the_spark_snippet_shows_the_records_already_in_the_topic(spark, broker, capsys):
    with Producer({"bootstrap.servers": broker.bootstrap}) as producer:
        producer.send("greetings", b"world", key=b"user-2").get(30)
    exec(against(snippet("spark"), broker.bootstrap), {})
    assert "|user-2|WORLD|" in capsys.readouterr().out


def test_register_sends_the_workers_to_this_interpreter(spark, broker, new_topic, monkeypatch, tmp_path):
    """As on a machine whose `python3` lacks gregor: the context was started without a choice, so
    its workers would run a Python that fails; after register they run this one."""
    topic = new_topic()
    with Producer({"bootstrap.servers": broker.bootstrap}) as producer:
        producer.send(topic, b"v").get(30)
    unusable = tmp_path / "python3"
    unusable.write_text("#!/bin/sh\nexit 3\n")
    unusable.chmod(0o755)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    context = spark.sparkContext
    context.pythonExec = str(unusable)
    try:
        gregor.spark.register(spark)
        assert context.pythonExec == sys.executable
        rows = spark.read.format("gregor").option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("subscribe", topic).load().select("value").collect()
    finally:
        context.pythonExec = sys.executable
        gregor.spark.register(spark)
    assert [row.value for row in rows] == [b"v"]


def session_with(conf: dict[str, str]) -> SimpleNamespace:
    return SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: conf.get(key, default)))


@pytest.mark.parametrize("conf, env, chosen", [
    ({}, None, sys.executable),
    ({}, "/opt/py/bin/python", "/opt/py/bin/python"),
    ({"spark.pyspark.python": "/srv/python"}, "/opt/py/bin/python", "/srv/python"),  # spark-submit's order
])
def test_the_users_choice_of_worker_python_wins(monkeypatch, conf, env, chosen):
    if env is None:
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    else:
        monkeypatch.setenv("PYSPARK_PYTHON", env)
    assert gregor.spark.worker_python(session_with(conf)) == chosen
