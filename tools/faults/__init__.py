"""The fault harness: a cluster of real processes behind a userspace TCP proxy (`proxy`, `cluster`),
Jepsen's Kafka queue workload (`workload`) recording a history (`history`), faults (`nemesis`:
kill -9, SIGSTOP, partitions, slow links), the anomaly checker (`checker`) and a plot (`plot`).
`run` ties them together; `scripts/faults.py` is the command line.
"""
