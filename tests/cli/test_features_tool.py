"""`gregor features` as kafka-features.sh: describe, upgrade / downgrade / disable (with --dry-run and
--release-version), version-mapping and feature-dependencies, Kafka's output lines, one error line
and exit 1 for bad input. The changes run against a broker of this module's own (the package's
broker is shared, and finalized levels change what other tests see)."""

from __future__ import annotations

import pytest

from tests.broker_process import BrokerProcess
from tests.cli.conftest import in_process, one_error_line


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory):
    process = BrokerProcess(str(tmp_path_factory.mktemp("gregor-features") / "data"))
    process.start()
    yield process
    process.stop()


def features(capsys, broker, *args: str):
    return in_process(capsys, "features", "--bootstrap-server", broker.bootstrap, *args)


def _described(result) -> dict[str, dict[str, str]]:
    rows = {}
    for line in result.stdout.splitlines():
        fields = dict(field.split(": ", 1) for field in line.split("\t"))
        rows[fields.pop("Feature")] = fields
    return rows


def test_describe_upgrade_dry_run_and_disable(capsys, own_broker):
    before = _described(features(capsys, own_broker, "describe"))
    assert before["metadata.version"] == {"SupportedMinVersion": "3.0-IV1", "SupportedMaxVersion": "3.9-IV0",
                                          "FinalizedVersionLevel": "3.9-IV0", "Epoch": before["metadata.version"]["Epoch"]}
    assert before["transaction.version"]["FinalizedVersionLevel"] == "2"
    off = features(capsys, own_broker, "disable", "--feature", "transaction.version")
    assert (off.returncode, off.stdout) == (0, "transaction.version was disabled.\n")
    assert _described(features(capsys, own_broker, "describe"))["transaction.version"]["FinalizedVersionLevel"] == "0"
    dry = features(capsys, own_broker, "upgrade", "--feature", "transaction.version=2", "--dry-run")
    assert (dry.returncode, dry.stdout) == (0, "transaction.version can be upgraded to 2.\n")
    done = features(capsys, own_broker, "upgrade", "--feature", "transaction.version=2")
    assert (done.returncode, done.stdout) == (0, "transaction.version was upgraded to 2.\n")
    after = _described(features(capsys, own_broker, "describe"))
    assert after["transaction.version"]["FinalizedVersionLevel"] == "2"
    assert int(after["transaction.version"]["Epoch"]) > int(before["transaction.version"]["Epoch"])
    down = features(capsys, own_broker, "downgrade", "--feature", "transaction.version=1")
    assert (down.returncode, down.stdout) == (0, "transaction.version was downgraded to 1.\n")


def test_refused_updates_print_kafkas_lines_and_exit_1(capsys, own_broker):
    refused = features(capsys, own_broker, "downgrade", "--release-version", "3.8")
    assert refused.returncode == 1
    assert refused.stdout == ("Could not downgrade metadata.version to 20. Invalid metadata.version 20. Refusing to "
                              "perform the requested downgrade because it might delete metadata information.\n")
    assert one_error_line(refused) == "gregor features: error: 1 out of 1 operation(s) failed."
    same = features(capsys, own_broker, "upgrade", "--release-version", "3.9-IV0", "--dry-run")
    assert same.stdout.splitlines() == ["group.version can be upgraded to 1.", "metadata.version can be upgraded to 21.",
                                        "share.version can be upgraded to 1.", "transaction.version can be upgraded to 2."]


@pytest.mark.parametrize("args, message", [
    (["upgrade", "--feature", "transaction.version"],
     "Can't parse feature=level string transaction.version: equals sign not found."),
    (["upgrade", "--feature", "transaction.version=two"],
     "Can't parse feature=level string transaction.version=two: unable to parse two as a short."),
    (["upgrade"], "You must specify at least one feature to upgrade"),
    (["upgrade", "--feature", "a=1", "--feature", "a=2"], "Feature a was specified more than once."),
    (["upgrade", "--release-version", "2.8"], "Unknown release version '2.8'. Supported versions are: 3.0-IV1 to "
                                              "3.9-IV0"),
    (["upgrade", "--release-version", "3.9", "--feature", "a=1"],
     "Can not specify both --release-version and --feature."),
])
def test_bad_input_is_one_line_and_exit_1(capsys, args, message):
    result = in_process(capsys, "features", "--bootstrap-server", "127.0.0.1:1", *args)
    assert result.returncode == 1
    assert one_error_line(result) == f"gregor features: error: {message}"


def test_version_mapping_and_feature_dependencies_need_no_cluster(capsys):
    latest = in_process(capsys, "features", "version-mapping")
    assert latest.stdout.splitlines() == ["metadata.version=21 (3.9-IV0)", "share.version=1", "transaction.version=2",
                                          "group.version=1"]
    older = in_process(capsys, "features", "version-mapping", "--release-version", "3.7")
    assert older.stdout.splitlines()[0] == "metadata.version=19 (3.7-IV4)"
    assert in_process(capsys, "features", "feature-dependencies", "--feature", "transaction.version=2",
                      "--feature", "metadata.version=21").stdout.splitlines() == [
        "transaction.version=2 requires:", "    metadata.version=7 (3.3-IV3)", "metadata.version=21 has no dependencies."]
    unknown = in_process(capsys, "features", "feature-dependencies", "--feature", "x.version=1")
    assert (unknown.returncode, one_error_line(unknown)) == (1, "gregor features: error: Unknown feature: x.version")
