"""`gregor dump-log`: decode segment (.log), offset index (.index), time index (.timeindex) and
aborted-transaction index (.txnindex) files offline, as kafka-dump-log.sh (DumpLogSegments), with
CRCs verified. Transaction markers show with --deep-iteration, as in Kafka (`endTxnMarker`)."""

from __future__ import annotations

import argparse
import os
import struct

from gregor.cli.common import ToolError, UsageError, add_tool, guarded
from gregor.records.batch import BatchHeader, scan_batches, verify_crc
from gregor.records.compression import Compression
from gregor.records.errors import RecordsError
from gregor.records.record import Record, control_record_type, decode_records
from gregor.storage.txn_index import decode_entries

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
MAX_UNCOMPRESSED = 1 << 30
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

EPILOG = """examples:
  gregor dump-log --files data/orders-0/00000000000000000000.log
  gregor dump-log --files data/orders-0/00000000000000000000.log --print-data-log
  gregor dump-log --files data/orders-0/00000000000000000000.index,data/orders-0/00000000000000000000.timeindex \\
      --index-sanity-check
  gregor dump-log --files data/orders-0/00000000000000000000.txnindex
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "dump-log", "decode segment and index files offline",
                      "Print the batches and records of .log files and the entries of .index, .timeindex and "
                      ".txnindex files, verifying CRCs (kafka-dump-log.sh). Needs no broker.", EPILOG)
    parser.add_argument("--files", required=True, metavar="FILE[,FILE]", help="comma-separated files to decode")
    parser.add_argument("--print-data-log", action="store_true", help="print each record's key and value "
                                                                      "(implies --deep-iteration)")
    parser.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="only check that index entries increase and point inside the segment")
    parser.add_argument("--max-bytes", type=int, default=2**31 - 1, metavar="N",
                        help="read at most N bytes of each .log file")
    parser.set_defaults(run=run)


@guarded("dump-log")
def run(args: argparse.Namespace) -> int:
    paths = [path for path in args.files.split(",") if path]
    for path in paths:
        if not path.endswith((".log", ".index", ".timeindex", ".txnindex")):
            raise UsageError(f"{path}: only .log, .index, .timeindex and .txnindex files can be dumped")
    for path in paths:
        data = _read(path, args.max_bytes if path.endswith(".log") else None)
        print(f"Dumping {path}")
        if path.endswith(".log"):
            dump_segment(data, _base_offset(path), args.deep_iteration or args.print_data_log, args.print_data_log)
        elif path.endswith(".txnindex"):
            dump_txn_index(path, data)
        else:
            dump_index(path, data, args.index_sanity_check)
    return 0


def _read(path: str, limit: int | None) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read() if limit is None else handle.read(limit)
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror or error}") from None


def _base_offset(path: str) -> int:
    stem = os.path.basename(path).split(".")[0]
    if not stem.isdigit():
        raise ToolError(f"{path}: a segment file is named by its 20-digit base offset")
    return int(stem)


def dump_segment(data: bytes, base_offset: int, deep: bool, payload: bool) -> None:
    """One line per batch (and per record when deep), Kafka's field names."""
    print(f"Log starting offset: {base_offset}")
    try:
        batches, end = scan_batches(data)
    except RecordsError as error:
        raise ToolError(f"corrupt segment: {error}") from None
    for header, position in batches:
        valid = verify_crc(data, position, header)
        print(_batch_line(header, position, valid))
        if deep and valid:
            for record in decode_records(data, position, header, MAX_UNCOMPRESSED):
                print(_record_line(header, record, payload))
    if end < len(data):
        print(f"Found {len(data) - end} invalid bytes at the end of the segment (position {end})")


def _batch_line(header: BatchHeader, position: int, valid: bool) -> str:
    return (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.records_count} "
            f"baseSequence: {header.base_sequence} lastSequence: {header.last_sequence} "
            f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} isTransactional: "
            f"{str(header.is_transactional).lower()} isControl: {str(header.is_control).lower()} "
            f"position: {position} {TIMESTAMP_TYPES[header.timestamp_type]}: {header.max_timestamp} "
            f"size: {header.size} magic: {header.magic} compresscodec: {Compression(header.compression).name.lower()} "
            f"crc: {header.crc} isvalid: {str(valid).lower()}")


def _record_line(header: BatchHeader, record: Record, payload: bool) -> str:
    sequence = header.base_sequence + (record.offset - header.base_offset) if header.base_sequence >= 0 else -1
    line = (f"| offset: {record.offset} {TIMESTAMP_TYPES[header.timestamp_type]}: {record.timestamp} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} sequence: {sequence} "
            f"headerKeys: [{','.join(name for name, _ in record.headers)}]")
    if header.is_control:
        marker = "COMMIT" if control_record_type(record) == 1 else "ABORT"
        coordinator_epoch = struct.unpack_from(">i", record.value or b"\0\0\0\0\0\0", 2)[0]
        return f"{line} endTxnMarker: {marker} coordinatorEpoch: {coordinator_epoch}"
    if payload:
        key = "" if record.key is None else f"key: {record.key.decode(errors='replace')} "
        value = "null" if record.value is None else record.value.decode(errors="replace")
        line += f" {key}payload: {value}"
    return line


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def dump_index(path: str, data: bytes, sanity_only: bool) -> None:
    """Entries of an offset index (offset, position) or time index (timestamp, offset)."""
    base = _base_offset(path)
    is_time = path.endswith(".timeindex")
    entry = TIME_ENTRY if is_time else OFFSET_ENTRY
    usable = len(data) - len(data) % entry.size
    previous = -1
    problems = []
    for index, (first, second) in enumerate(entry.iter_unpack(data[:usable])):
        if index > 0 and first == 0 and second == 0:
            break
        key = first if is_time else base + first
        if key < previous:
            problems.append(f"entry {index}: {key} is below the previous {previous}")
        previous = key
        if not sanity_only:
            print(f"timestamp: {first} offset: {base + second}" if is_time else f"offset: {key} position: {second}")
    if problems:
        raise ToolError(f"{path} is not in order: {problems[0]}")
    if sanity_only:
        print(f"{path} passed sanity check.")


def dump_txn_index(path: str, data: bytes) -> None:
    """One line per aborted transaction, Kafka's fields (version, producer id, offsets)."""
    try:
        entries = decode_entries(data)
    except ValueError as error:
        raise ToolError(f"{path}: {error}") from None
    for txn in entries:
        print(f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
              f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")
