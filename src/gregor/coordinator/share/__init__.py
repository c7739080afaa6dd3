"""Share groups (KIP-932), sans-IO: membership and assignment (`share_group`), the per-partition
delivery state (`share_partition`), share sessions (`share_session`) and the persisted form of a
share-partition's state (`share_state_records`)."""
