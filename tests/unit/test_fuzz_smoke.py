"""A short run of the decoder fuzzer (scripts/fuzz.py runs the long one): no untyped exception."""

from __future__ import annotations

import random

from gregor.protocol.exceptions import DecodeError

from tools.fuzzing import corpus, runner, targets


def test_every_advertised_api_and_version_has_seeds_that_decode():
    seeds = corpus.request_seeds(random.Random(1), per_version=1)
    advertised = corpus.advertised_versions()
    assert {(s.api_key, s.version) for s in seeds} == {
        (key, version) for key, (low, high) in advertised.items() for version in range(low, high + 1)}
    assert all(targets.request_frame(s.frame, advertised) == "decoded" for s in seeds)


def test_every_codec_and_magic_has_record_seeds_that_validate():
    seeds = corpus.records_seeds(random.Random(1))
    assert {(s.magic, s.codec) for s in seeds} == {(2, c) for c in corpus.CODECS} | {
        (m, c) for m in (0, 1) for c in corpus.CODECS if c != 4}
    assert all(targets.record_set(s.data) == "valid" for s in seeds)


def test_a_smoke_run_finds_no_untyped_exception():
    report = runner.fuzz(60_000, seed=7)
    assert report.finding_count == 0, [f.trace for f in report.findings.values()]
    assert set(report.by_family) == {"request-frame", "request-body", "record-set", "record-set-unchecked",
                                     "decompress"}
    outcomes = set(report.outcomes)
    assert {"request-frame: decoded", "request-frame: DecodeError", "record-set: RecordsError",
            "decompress: decompressed"} <= outcomes


def test_an_untyped_exception_is_reported_with_its_input(monkeypatch):
    def broken(frame, advertised):
        if len(frame) % 2:
            raise IndexError("boom")
        raise DecodeError("typed")

    monkeypatch.setattr(targets, "request_frame", broken)
    lines = []
    report = runner.fuzz(2_000, seed=7, print_line=lines.append)
    assert report.finding_count > 0 and len(report.findings) == 1
    assert any("IndexError" in line and "input:" in line for line in lines)
