"""The KRaft quorum over `__cluster_metadata`: election state and its file, the replicated log with
its epoch cache and snapshots, the sans-IO client (effects, messages), `controller.quorum.voters`."""
