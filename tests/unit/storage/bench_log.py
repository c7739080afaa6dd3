"""Append and read throughput of `Log` (prints numbers; run `python -m tests.unit.storage.bench_log`).

Each produce request carries one batch of the given size, built once, as a producer sends it;
the timed append loop is exactly the broker's hot path (`append_as_leader`: copy, header parse,
CRC32C, in-place patch, pwrite, index entries). Reads are 1 MiB fetches from offset 0 to the end,
as file slices (`read`) and as bytes (`read_bytes`, one pread per slice).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

from gregor.records.batch import parse_header
from gregor.records.record import BatchBuilder
from gregor.storage.log import Log, LogConfig

NOW = 1_700_000_000_000
FETCH_BYTES = 1 << 20


def request_of(batch_bytes: int) -> bytes:
    builder = BatchBuilder()
    while builder.estimated_size() < batch_bytes - 110:
        builder.append(NOW, None, b"x" * 100)
    return builder.build()


def bench(batch_bytes: int, total_bytes: int, directory: str) -> None:
    root = tempfile.mkdtemp(dir=directory)
    try:
        log = Log(f"{root}/bench-0", LogConfig(segment_bytes=128 << 20), NOW)
        request = request_of(batch_bytes)
        records_per_batch = parse_header(request).records_count
        count = total_bytes // len(request)
        started = time.perf_counter()
        for _ in range(count):
            log.append_as_leader(request, 0, NOW)
        elapsed = time.perf_counter() - started
        print(f"append {len(request):6d}-byte batches: {count / elapsed:9.0f} appends/s "
              f"{count * len(request) / elapsed / 1e6:8.1f} MB/s")
        log.high_watermark = log.log_end_offset
        for method in ("read", "read_bytes"):
            offset = fetches = moved = 0
            started = time.perf_counter()
            while offset < log.log_end_offset:
                result = getattr(log, method)(offset, FETCH_BYTES, log.high_watermark)
                size = result.size if method == "read" else len(result)
                offset += size // len(request) * records_per_batch
                moved += size
                fetches += 1
            elapsed = time.perf_counter() - started
            print(f"{method:10s} {len(request):6d}-byte batches, 1 MiB fetches: {fetches / elapsed:8.0f} fetches/s "
                  f"{moved / elapsed / 1e6:8.0f} MB/s")
        log.close()
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else None
    bench(16 * 1024, 512 << 20, where)
    bench(1024, 128 << 20, where)
