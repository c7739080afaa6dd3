"""Fuzz Gregor's decoders: every request API and version the broker advertises, and record sets in
every codec (none, gzip, snappy, lz4, zstd; v2 batches and legacy v0/v1 message sets).

    python scripts/fuzz.py --executions 10000000 [--seed N] [--findings DIR]
    python scripts/fuzz.py --engine atheris [-- libFuzzer flags, e.g. -runs=1000000]
    python scripts/fuzz.py --wire-port 9092 --executions 20000   # mutated frames to a running broker

The default engine is a seeded, structure-aware mutational loop (tools/fuzzing): valid seeds of
every (API, version) and record set, mutated with lying lengths, truncations and splices, CRCs
recomputed half the time so that damaged records get past the CRC check. It reports executions,
execs/s, peak RSS and every untyped exception (an exception other than DecodeError for requests
or RecordsError for record sets), and exits 1 if there was one. `--engine atheris` hands the same
targets to atheris (libFuzzer, coverage-guided), starting from the same seeds. `--wire-port` sends
mutated request frames to a broker you started (a throwaway one: some frames create topics and
groups; destructive APIs are left out), each on its own connection, and counts how each was
answered; look for "Fatal error" in that broker's log afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, "src"), REPO]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("builtin", "atheris"), default="builtin")
    parser.add_argument("--executions", type=int, default=1_000_000, help="inputs to run (builtin engine)")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long (builtin engine)")
    parser.add_argument("--seed", type=int, default=0, help="the run's random seed: the same seed replays it")
    parser.add_argument("--progress", type=float, default=60.0, help="seconds between progress lines")
    parser.add_argument("--findings", default=None, help="directory for the inputs of untyped exceptions")
    parser.add_argument("--wire-port", type=int, default=None, help="fuzz the broker listening on this port")
    parser.add_argument("libfuzzer_args", nargs="*", help="after --: arguments for atheris/libFuzzer")
    args = parser.parse_args(argv)
    if args.engine == "atheris":
        return _atheris(args)
    if args.wire_port is not None:
        from tools.fuzzing.wire import fuzz_broker

        wire = fuzz_broker(args.wire_port, args.executions, args.seed)
        print(f"done: {wire.sent} frames sent; " + ", ".join(f"{k}: {v}" for k, v in sorted(wire.outcomes.items())))
        return 0
    from tools.fuzzing.runner import fuzz

    print(f"fuzz: seed {args.seed}, up to {args.executions} executions", flush=True)
    report = fuzz(args.executions, args.seed, args.seconds, args.progress, args.findings,
                  lambda line: print(line, flush=True))
    print("done: " + report.line())
    for family, count in sorted(report.by_family.items()):
        print(f"  {family}: {count}")
    for outcome, count in sorted(report.outcomes.items()):
        print(f"    {outcome}: {count}")
    for finding in report.findings.values():
        print(f"UNTYPED {finding.error} in {finding.family} at {finding.where}")
    return 1 if report.finding_count else 0


def _atheris(args: argparse.Namespace) -> int:
    import atheris

    with atheris.instrument_imports(include=["gregor"]):
        from tools.fuzzing.runner import families

    pool = families(random.Random(args.seed))
    corpus_dir = os.path.join(args.findings or tempfile.mkdtemp(prefix="gregor-fuzz-"), "corpus")
    print(f"fuzz: atheris corpus in {corpus_dir} (crash inputs go to the working directory)", flush=True)
    os.makedirs(corpus_dir, exist_ok=True)
    for number, family in enumerate(pool):
        for index, seed in enumerate(family.seeds):
            with open(os.path.join(corpus_dir, f"{family.name}-{index}"), "wb") as handle:
                handle.write(bytes([number, index & 0xFF, index >> 8]) + seed)

    def one_input(data: bytes) -> None:
        """First byte: the family; the next two: the seed index (for a target that needs it)."""
        if len(data) < 3:
            return
        family = pool[data[0] % len(pool)]
        index = (data[1] | data[2] << 8) % len(family.seeds)
        try:
            family.run(index, data[3:])
        except family.allowed:
            pass

    atheris.Setup([sys.argv[0], corpus_dir, *args.libfuzzer_args], one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
