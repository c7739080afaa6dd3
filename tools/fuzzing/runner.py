"""A deterministic mutational fuzzing loop over the targets, with the figures a long run reports.

Each execution picks a family (request frames of every advertised API and version, whole request
bodies, record sets checked as the log appends them, record sets decoded unchecked, raw
decompression per codec), a valid seed of it, mutates it and runs the target. An exception that
is not one of the family's typed errors is a finding: its input is saved and its traceback
printed once per distinct place. The same `--seed` replays the same inputs.
"""

from __future__ import annotations

import os
import random
import resource
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from tools.fuzzing import corpus, targets
from tools.fuzzing.mutator import mutate


@dataclass
class Family:
    name: str
    weight: int
    seeds: list[bytes]
    run: Callable[[int, bytes], str]  # (seed index, input) -> outcome
    allowed: tuple[type[BaseException], ...]
    fix_crcs: bool = False


@dataclass
class Finding:
    family: str
    error: str
    where: str
    data: bytes
    trace: str


@dataclass
class Report:
    executions: int = 0
    seconds: float = 0.0
    by_family: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    finding_count: int = 0

    @property
    def execs_per_second(self) -> float:
        return self.executions / self.seconds if self.seconds else 0.0

    @staticmethod
    def peak_rss_mib() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def line(self) -> str:
        return (f"executions={self.executions} execs/s={self.execs_per_second:.0f} "
                f"peak_rss_mib={self.peak_rss_mib():.1f} untyped_exceptions={self.finding_count} "
                f"distinct={len(self.findings)}")


def families(rng: random.Random, per_version: int = 3) -> list[Family]:
    """The families of inputs, each with its seeds; the weights give requests most executions."""
    advertised = corpus.advertised_versions()
    requests = corpus.request_seeds(rng, per_version)
    frames = [seed.frame for seed in requests]
    records = corpus.records_seeds(rng)
    record_data = [seed.data for seed in records]

    def frame(index: int, data: bytes) -> str:
        return targets.request_frame(data, advertised)

    def body(index: int, data: bytes) -> str:
        seed = requests[index]
        return targets.request_body(seed.api_key, seed.version, data)

    bodies = [_body_of(seed) for seed in requests]
    compressed = [(seed.codec, seed.magic, _payload_of(seed)) for seed in records if seed.codec]

    def raw(index: int, data: bytes) -> str:
        codec, magic, _ = compressed[index]
        return targets.decompressed(codec, magic)(data)

    return [
        Family("request-frame", 70, frames, frame, targets.REQUEST_ALLOWED),
        Family("request-body", 10, bodies, body, targets.REQUEST_ALLOWED),
        Family("record-set", 10, record_data, lambda i, d: targets.record_set(d), targets.RECORDS_ALLOWED, True),
        Family("record-set-unchecked", 5, record_data, lambda i, d: targets.record_set_unchecked(d),
               targets.RECORDS_ALLOWED, True),
        Family("decompress", 5, [payload for _, _, payload in compressed], raw, targets.RECORDS_ALLOWED),
    ]


def _body_of(seed: corpus.RequestSeed) -> bytes:
    from gregor.protocol.headers import parse_request_header

    _, offset = parse_request_header(memoryview(seed.frame))
    return seed.frame[offset:]


def _payload_of(seed: corpus.RecordsSeed) -> bytes:
    """The compressed part of a seed: the records section of its first v2 batch, or the value of
    its legacy wrapper."""
    data = seed.data
    if seed.magic == 2:
        length = int.from_bytes(data[8:12], "big", signed=True)
        return data[61:12 + length]
    start = 12 + 6 + (8 if seed.magic == 1 else 0) + 4  # after the wrapper's null key
    return data[start + 4:]


def fuzz(executions: int, seed: int = 0, seconds: float | None = None, progress_every: float = 0,
         findings_dir: str | None = None, print_line: Callable[[str], None] = print) -> Report:
    """Run `executions` inputs (or until `seconds` pass); print a progress line every
    `progress_every` seconds; save each distinct finding's input under `findings_dir`."""
    rng = random.Random(seed)
    pool = families(rng)
    weights = [family.weight for family in pool]
    report = Report()
    started = time.monotonic()
    next_progress = started + progress_every if progress_every else float("inf")
    picks = rng.choices(range(len(pool)), weights, k=4096)
    while report.executions < executions:
        family = pool[picks[report.executions % 4096]]
        index = rng.randrange(len(family.seeds))
        data = mutate(family.seeds[index], rng, rng.choice(family.seeds))
        if family.fix_crcs and rng.random() < 0.5:
            data = targets.fix_crcs(data)
        try:
            outcome = family.run(index, data)
        except family.allowed as error:
            outcome = type(error).__name__
        except Exception as error:  # noqa: BLE001 - an untyped exception is what the fuzzer looks for
            _record(report, family.name, error, data, findings_dir, print_line)
            outcome = "UNTYPED " + type(error).__name__
        report.executions += 1
        report.by_family[family.name] += 1
        report.outcomes[f"{family.name}: {outcome}"] += 1
        if report.executions % 1024 == 0:
            now = time.monotonic()
            report.seconds = now - started
            if seconds is not None and report.seconds >= seconds:
                break
            if now >= next_progress:
                print_line(report.line())
                next_progress = now + progress_every
    report.seconds = time.monotonic() - started
    return report


def _record(report: Report, family: str, error: Exception, data: bytes, findings_dir: str | None,
            print_line: Callable[[str], None]) -> None:
    report.finding_count += 1
    frames = traceback.extract_tb(error.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    key = (type(error).__name__, where)
    if key in report.findings:
        return
    trace = "".join(traceback.format_exception(error))
    report.findings[key] = Finding(family, type(error).__name__, where, data, trace)
    print_line(f"FINDING in {family}: {type(error).__name__} at {where}\n  input: {data.hex()}\n{trace}")
    if findings_dir:
        os.makedirs(findings_dir, exist_ok=True)
        with open(os.path.join(findings_dir, f"{family}-{len(report.findings)}.bin"), "wb") as handle:
            handle.write(data)
