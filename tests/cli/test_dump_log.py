"""`gregor dump-log` through its command line on segment and index files written here, and on a
real broker's segment. The batches are built with known contents and one is corrupted on purpose."""

from __future__ import annotations

import struct

from gregor.records.compression import Compression
from gregor.records.record import BatchBuilder
from tests.cli.conftest import gregor, in_process, one_error_line


def write_segment(directory) -> str:
    data = BatchBuilder(compression=Compression.GZIP, base_offset=100, producer_id=7, producer_epoch=1,
                        base_sequence=3, partition_leader_epoch=2)
    data.append(1700000000000, b"k", b"hello", [("trace", b"1")])
    data.append(1700000000001, None, b"world")
    control = BatchBuilder(base_offset=102, producer_id=7, producer_epoch=1, is_transactional=True, is_control=True)
    control.append(1700000000002, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))
    segment = directory / "00000000000000000100.log"
    third = BatchBuilder(base_offset=103)
    third.append(1700000000003, None, b"bad")
    corrupt = bytearray(third.build())
    corrupt[-1] ^= 0xFF
    segment.write_bytes(data.build() + control.build() + bytes(corrupt))
    (directory / "00000000000000000100.index").write_bytes(struct.pack(">ii", 0, 0) + struct.pack(">ii", 2, 90)
                                                           + bytes(16))
    (directory / "00000000000000000100.timeindex").write_bytes(struct.pack(">qi", 1700000000001, 1))
    return str(segment)


def test_dump_segment_and_indexes(tmp_path):
    segment = write_segment(tmp_path)
    result = gregor("dump-log", "--files", segment, "--print-data-log")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 100"]
    assert lines[2].startswith("baseOffset: 100 lastOffset: 101 count: 2 baseSequence: 3 lastSequence: 4 "
                               "producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 2 isTransactional: false")
    assert "compresscodec: gzip" in lines[2] and lines[2].endswith("isvalid: true")
    assert lines[3] == ("| offset: 100 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: 3 "
                        "headerKeys: [trace] key: k payload: hello")
    assert lines[4].endswith("sequence: 4 headerKeys: [] payload: world")
    assert "isControl: true" in lines[5]
    assert lines[6].endswith("endTxnMarker: COMMIT coordinatorEpoch: 5")
    assert lines[7].startswith("baseOffset: 103") and lines[7].endswith("isvalid: false")

    index = segment.replace(".log", ".index")
    timeindex = segment.replace(".log", ".timeindex")
    indexes = gregor("dump-log", "--files", f"{index},{timeindex}")
    assert indexes.stdout.splitlines() == [f"Dumping {index}", "offset: 100 position: 0", "offset: 102 position: 90",
                                           f"Dumping {timeindex}", "timestamp: 1700000000001 offset: 101"]


def test_dump_a_broker_segment(bootstrap, broker):
    topic = "dumped"
    assert gregor("console-producer", *bootstrap, "--topic", topic, stdin="a\nb\n").returncode == 0
    segment = f"{broker.data_dir}/{topic}-0/00000000000000000000.log"
    result = gregor("dump-log", "--files", segment, "--deep-iteration")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("| offset:") == 2
    assert "isvalid: false" not in result.stdout


def test_errors(tmp_path, capsys):
    missing = in_process(capsys, "dump-log", "--files", str(tmp_path / "00000000000000000000.log"))
    assert missing.returncode == 1
    assert "cannot read" in one_error_line(missing)
    wrong = in_process(capsys, "dump-log", "--files", str(tmp_path / "notes.txt"))
    assert wrong.returncode == 2
    assert "only .log, .index, .timeindex and .txnindex" in one_error_line(wrong)
    torn = tmp_path / "00000000000000000000.txnindex"
    torn.write_bytes(bytes(35))
    broken = in_process(capsys, "dump-log", "--files", str(torn))
    assert broken.returncode == 1
    assert "not a whole number of 34-byte entries" in one_error_line(broken)


def test_dump_a_transaction_index(tmp_path):
    from gregor.storage.txn_index import AbortedTxn, TransactionIndex
    path = tmp_path / "00000000000000000100.txnindex"
    index = TransactionIndex(str(path))
    index.append(AbortedTxn(producer_id=7, first_offset=100, last_offset=104, last_stable_offset=102))
    index.append(AbortedTxn(producer_id=9, first_offset=102, last_offset=106, last_stable_offset=107))
    result = gregor("dump-log", "--files", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Dumping {path}",
        "version: 0 producerId: 7 firstOffset: 100 lastOffset: 104 lastStableOffset: 102",
        "version: 0 producerId: 9 firstOffset: 102 lastOffset: 106 lastStableOffset: 107"]
