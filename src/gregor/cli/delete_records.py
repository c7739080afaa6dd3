"""`gregor delete-records`: delete the records of partitions before an offset, as kafka-delete-records.sh.

The partitions' log start offsets move up to the given offsets (-1: the high watermark), so the
records below them are no longer readable and their segments are removed. The offsets come in
Kafka's JSON file: {"partitions": [{"topic": T, "partition": N, "offset": O}, ...], "version": 1}.
"""

from __future__ import annotations

import argparse
from typing import Any

from gregor.cli.common import (
    EXIT_OK, ToolError, UsageError, add_connection_options, add_tool, explain, guarded, open_admin,
    partition_name, read_json_file,
)
from gregor.client import KafkaException, TopicPartition

EPILOG = """examples:
  gregor delete-records --bootstrap-server localhost:9092 --offset-json-file delete.json

with delete.json:
  {"partitions": [{"topic": "orders", "partition": 0, "offset": 1000}], "version": 1}
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "delete-records", "delete the records of partitions before an offset",
                      "Delete the records of partitions before an offset (kafka-delete-records.sh).", EPILOG)
    add_connection_options(parser)
    parser.add_argument("--offset-json-file", metavar="FILE",
                        help="the partitions and the offset to delete before, in Kafka's JSON format (required)")
    parser.set_defaults(run=run)


@guarded("delete-records")
def run(args: argparse.Namespace) -> int:
    if args.offset_json_file is None:
        raise UsageError("Missing required option(s): --offset-json-file")
    offsets = parse_offset_file(read_json_file(args.offset_json_file, "--offset-json-file"), args.offset_json_file)
    admin = open_admin(args)
    try:
        print("Executing records delete operation")
        results = admin.delete_records(offsets)
    finally:
        admin.close()
    print("Records delete operation completed:")
    failed = 0
    for tp, result in results.items():
        if isinstance(result, KafkaException):
            failed += 1
            print(f"partition: {partition_name(*tp)}\terror: {explain(result, args)}")
        else:
            print(f"partition: {partition_name(*tp)}\tlow_watermark: {result.low_watermark}")
    if failed:
        raise ToolError(f"the records of {failed} partition(s) could not be deleted")
    return EXIT_OK


def parse_offset_file(document: Any, path: str) -> dict[TopicPartition, int]:
    """Kafka's offset file, version 1; a partition listed twice is refused, as Kafka does."""
    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise ToolError(f"--offset-json-file {path}: expected {{\"partitions\": [{{\"topic\": ..., \"partition\": "
                        f"..., \"offset\": ...}}], \"version\": 1}}")
    if document.get("version", 1) != 1:
        raise ToolError(f"--offset-json-file {path}: Not supported version field value {document['version']}")
    offsets: dict[TopicPartition, int] = {}
    duplicates = []
    for entry in document["partitions"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("topic"), str)
                and all(isinstance(entry.get(key), int) for key in ("partition", "offset"))):
            raise ToolError(f"--offset-json-file {path}: each partition needs \"topic\" (string), \"partition\" "
                            f"and \"offset\" (integers), got {entry!r}")
        tp = TopicPartition(entry["topic"], entry["partition"])
        if tp in offsets:
            duplicates.append(partition_name(*tp))
        offsets[tp] = entry["offset"]
    if duplicates:
        raise ToolError(f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    return offsets
