"""The connector's `kafka.security.protocol`, `kafka.sasl.*` and `kafka.ssl.*` options reach
Gregor's client on the driver and in the executors: a batch write and a batch read over a
SASL_SSL listener (PLAIN)."""

from __future__ import annotations

import os

import pytest

from tests.broker_process import BrokerProcess, free_port
from tests.security.certificates import make_certificates

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_spark="spark-secret";'


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    certificates = make_certificates(str(tmp_path_factory.mktemp("spark-certificates")))
    process = BrokerProcess(os.path.join(str(tmp_path_factory.mktemp("spark-sasl-ssl")), "data"))
    port = free_port()
    process.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{process.port},SASL_SSL://127.0.0.1:{port}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": certificates.keystore("broker"),
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS})
    process.start()
    options = {"kafka.bootstrap.servers": f"127.0.0.1:{port}", "kafka.security.protocol": "SASL_SSL",
               "kafka.sasl.mechanism": "PLAIN",
               "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                         'username="spark" password="spark-secret";',
               "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": certificates.ca}
    yield options
    process.stop()


@pytest.mark.slow
def test_a_write_and_a_read_over_sasl_ssl(spark, secured):
    topic = "spark-sasl-ssl"
    spark.createDataFrame([(f"v{i}",) for i in range(5)], "value string").write.format("gregor") \
        .mode("append").options(**secured).option("topic", topic).save()
    rows = spark.read.format("gregor").options(**secured).option("subscribe", topic).load() \
        .selectExpr("CAST(value AS STRING) AS value").collect()
    assert sorted(row.value for row in rows) == [f"v{i}" for i in range(5)]

