"""`gregor topics` through its command line against a real broker."""

from __future__ import annotations

import uuid

import pytest

from tests.cli.conftest import gregor, in_process, one_error_line


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_create_describe_alter_delete(bootstrap):
    name = fresh("orders")
    created = gregor("topics", *bootstrap, "--create", "--topic", name, "--partitions", "2",
                     "--replication-factor", "1", "--config", "retention.ms=3600000")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == f"Created topic {name}."

    described = gregor("topics", *bootstrap, "--describe", "--topic", name)
    assert described.returncode == 0, described.stderr
    lines = described.stdout.strip().splitlines()
    header = dict(field.split(": ", 1) for field in lines[0].split("\t"))
    assert header["Topic"] == name
    assert header["PartitionCount"] == "2"
    assert header["ReplicationFactor"] == "1"
    assert "retention.ms=3600000" in header["Configs"].split(",")  # plus static broker overrides, as Kafka
    partitions = [dict(field.split(": ", 1) for field in line.strip().split("\t")) for line in lines[1:]]
    assert [p["Partition"] for p in partitions] == ["0", "1"]
    assert all(p["Leader"] == "1" and p["Replicas"] == "1" and p["Isr"] == "1" for p in partitions)

    altered = gregor("topics", *bootstrap, "--alter", "--topic", name, "--partitions", "3")
    assert altered.returncode == 0, altered.stderr
    described = gregor("topics", *bootstrap, "--describe", "--topic", name)
    assert "PartitionCount: 3" in described.stdout

    deleted = gregor("topics", *bootstrap, "--delete", "--topic", name)
    assert deleted.returncode == 0, deleted.stderr
    assert name not in gregor("topics", *bootstrap, "--list").stdout.split()


def test_create_twice_and_if_not_exists(bootstrap):
    name = fresh("twice")
    assert gregor("topics", *bootstrap, "--create", "--topic", name).returncode == 0
    again = gregor("topics", *bootstrap, "--create", "--topic", name)
    assert again.returncode == 1
    assert "TOPIC_ALREADY_EXISTS" in one_error_line(again)
    quiet = gregor("topics", *bootstrap, "--create", "--topic", name, "--if-not-exists")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_topic_regex_for_list_describe_delete(bootstrap):
    stem = fresh("rx")
    for suffix in ("a", "b"):
        assert gregor("topics", *bootstrap, "--create", "--topic", f"{stem}-{suffix}").returncode == 0
    listed = gregor("topics", *bootstrap, "--list", "--topic", f"{stem}-.*")
    assert listed.stdout.split() == [f"{stem}-a", f"{stem}-b"]
    described = gregor("topics", *bootstrap, "--describe", "--topic", f"{stem}-(a|b)")
    assert described.stdout.count("PartitionCount") == 2
    assert gregor("topics", *bootstrap, "--delete", "--topic", f"{stem}-.*").returncode == 0
    assert gregor("topics", *bootstrap, "--list", "--topic", f"{stem}-.*").stdout == ""


def test_unknown_topic(bootstrap):
    name = fresh("missing")
    for action in (["--describe"], ["--delete"], ["--alter", "--partitions", "4"]):
        result = gregor("topics", *bootstrap, *action, "--topic", name)
        assert result.returncode == 1
        assert f"Topic '{name}' does not exist" in one_error_line(result)
        quiet = gregor("topics", *bootstrap, *action, "--topic", name, "--if-exists")
        assert quiet.returncode == 0, quiet.stderr


@pytest.mark.parametrize("args, message", [
    ([], "give exactly one of --create"),
    (["--list", "--delete"], "give exactly one of"),
    (["--create"], "--create needs --topic"),
    (["--create", "--topic", "x", "--partitions", "0"], "--partitions must be at least 1"),
    (["--alter", "--topic", "x"], "--alter needs --partitions"),
    (["--alter", "--topic", "x", "--partitions", "2", "--config", "a=b"], "gregor configs --alter"),
    (["--create", "--topic", "x", "--config", "novalue"], "expected key=value"),
    (["--describe", "--topic", "("], "not a valid regular expression"),
    (["--list", "--no-such-flag"], "unrecognized arguments"),
])
def test_wrong_arguments(capsys, args, message):
    result = in_process(capsys, "topics", "--bootstrap-server", "127.0.0.1:9", *args)
    assert result.returncode == 2
    assert message in one_error_line(result)


def test_wrong_arguments_through_the_command_line():
    result = gregor("topics", "--list")
    assert result.returncode == 2
    assert "--bootstrap-server" in one_error_line(result)


def test_unreachable_broker(unreachable):
    result = gregor("topics", *unreachable, "--list", "--timeout", "1500")
    assert result.returncode == 1
    line = one_error_line(result)
    assert "cannot reach the cluster" in line and "within 1500 ms" in line


def test_help_has_examples(capsys):
    result = in_process(capsys, "topics", "--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout and "--replication-factor" in result.stdout
