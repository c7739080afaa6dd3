"""Fuzzing of Gregor's decoders: every request API and version the broker advertises, and record
batches / legacy message sets in every compression codec.

The property checked is the one the broker relies on: decoding arbitrary bytes either succeeds or
raises one of the typed errors the broker turns into a Kafka answer (`DecodeError`: the connection
is closed; `RecordsError`: the partition gets its error code). Anything else is a finding.

`corpus` builds valid seeds, `mutator` damages them, `targets` holds the decoders as the broker
calls them, `runner` drives a deterministic mutational loop (`scripts/fuzz.py` is its command line,
which can also hand the same targets to atheris for coverage guidance).
"""
