"""The KRaft quorum over `__cluster_metadata`: quorum state, its file, the replicated log, the client."""
