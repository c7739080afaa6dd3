"""Wrong usage of the replica and offset tools, and "did you mean": each is one line on stderr
and the exit code the other tools use (2 for usage, 1 for a bad file), found before any
connection is made (the bootstrap address is never reached)."""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import in_process, one_error_line

NOWHERE = ["--bootstrap-server", "127.0.0.1:1"]


@pytest.fixture
def write(tmp_path):
    def make(content) -> str:
        path = tmp_path / "input.json"
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return str(path)
    return make


@pytest.mark.parametrize("args, message", [
    (["leader-election", *NOWHERE, "--all-topic-partitions"], "Missing required option(s): --election-type"),
    (["leader-election", *NOWHERE, "--election-type", "PREFERRED"], "One and only one of the following options"),
    (["leader-election", *NOWHERE, "--election-type", "PREFERRED", "--topic", "t", "--all-topic-partitions"],
     "One and only one of the following options"),
    (["leader-election", *NOWHERE, "--election-type", "PREFERRED", "--topic", "t"], "--partition"),
    (["leader-election", *NOWHERE, "--election-type", "BEST", "--all-topic-partitions"],
     "expected PREFERRED or UNCLEAN"),
    (["delete-records", *NOWHERE], "Missing required option(s): --offset-json-file"),
    (["reassign-partitions", *NOWHERE], "give exactly one of --generate, --execute, --verify, --cancel, --list"),
    (["reassign-partitions", *NOWHERE, "--execute"], "--execute needs --reassignment-json-file"),
    (["reassign-partitions", *NOWHERE, "--generate", "--broker-list", "1"], "--generate needs --topics-to-move"),
    (["reassign-partitions", *NOWHERE, "--list", "--additional"], "--additional works with --execute only"),
    (["log-dirs", *NOWHERE], "--describe is the only action and must be given"),
    (["log-dirs", *NOWHERE, "--describe", "--broker-list", "one"], "expected broker ids like 1,2,3"),
    (["get-offsets", *NOWHERE, "--time", "-7"], "unknown special time -7"),
    (["get-offsets", *NOWHERE, "--time", "yesterday"], "expected -1, -2, -3, latest, earliest, max-timestamp"),
    (["get-offsets", *NOWHERE, "--partitions", "0,x"], "expected partition numbers"),
    (["get-offsets", *NOWHERE, "--topic", "("], "not a valid regular expression"),
    (["get-offsets"], "missing required option --bootstrap-server"),
])
def test_wrong_options(capsys, args, message):
    result = in_process(capsys, *args)
    assert result.returncode == 2
    assert message in one_error_line(result)


@pytest.mark.parametrize("tool, flag, content, message", [
    ("delete-records", "--offset-json-file", "{not json", "is not valid JSON"),
    ("delete-records", "--offset-json-file", {"partitions": [{"topic": "t", "partition": 0}], "version": 1},
     "each partition needs"),
    ("delete-records", "--offset-json-file", {"partitions": [], "version": 3}, "Not supported version field value 3"),
    ("delete-records", "--offset-json-file",
     {"partitions": [{"topic": "t", "partition": 0, "offset": 1}, {"topic": "t", "partition": 0, "offset": 2}]},
     "Offset json file contains duplicate topic partitions: t-0"),
    ("leader-election", "--path-to-json-file", "[1, 2", "is not valid JSON"),
    ("leader-election", "--path-to-json-file", {"topics": []}, "expected {\"partitions\""),
    ("leader-election", "--path-to-json-file",
     {"partitions": [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 1}]},
     "Replica election data contains duplicate partitions: t-1"),
    ("reassign-partitions", "--reassignment-json-file", "", "is not valid JSON"),
    ("reassign-partitions", "--reassignment-json-file", {"version": 1, "partitions": []},
     "Partition reassignment list cannot be empty"),
    ("reassign-partitions", "--reassignment-json-file",
     {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}, "duplicate entries"),
    ("reassign-partitions", "--reassignment-json-file",
     {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}]},
     "is different from size of log dirs list"),
    ("reassign-partitions", "--reassignment-json-file",
     {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/data"]}]},
     "moving replicas to given log dirs is not supported"),
])
def test_bad_files(capsys, write, tool, flag, content, message):
    action = ["--execute"] if tool == "reassign-partitions" else []
    election = ["--election-type", "PREFERRED"] if tool == "leader-election" else []
    result = in_process(capsys, tool, *NOWHERE, *action, *election, flag, write(content))
    assert result.returncode == 1
    assert message in one_error_line(result)


def test_a_missing_file(capsys, tmp_path):
    result = in_process(capsys, "delete-records", *NOWHERE, "--offset-json-file", str(tmp_path / "absent.json"))
    assert result.returncode == 1
    assert "cannot read --offset-json-file" in one_error_line(result)


@pytest.mark.parametrize("args, line", [
    (["topcis"], "gregor: error: argument <tool>: invalid choice: 'topcis'; did you mean topics? "
                 "(see 'gregor --help')"),
    (["get-offset"], "did you mean get-offsets?"),
    (["topics", "--bootstrap-servr", "x", "--list"],
     "gregor topics: error: unrecognized arguments: --bootstrap-servr x; did you mean --bootstrap-server? "
     "(see 'gregor topics --help')"),
    (["reassign-partitions", "--reasignment-json-file=plan.json"], "did you mean --reassignment-json-file?"),
    (["console-consumer", "--isolation-level", "read_comitted"], "did you mean read_committed"),
])
def test_did_you_mean(capsys, args, line):
    result = in_process(capsys, *args)
    assert result.returncode == 2
    assert line in one_error_line(result)


def test_nothing_close_suggests_nothing(capsys):
    result = in_process(capsys, "qqqqqq")
    assert result.returncode == 2
    assert "did you mean" not in one_error_line(result)
