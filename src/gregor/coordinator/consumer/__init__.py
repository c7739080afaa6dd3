"""KIP-848 consumer groups (`group.protocol=consumer`): the broker computes the assignment.

Sans-IO like the classic coordinator beside it: `ConsumerGroups` takes heartbeats and the time
and returns effects (`Respond`, `AppendRecords`) through the classic coordinator's manager, whose
`__consumer_offsets` partitions, timers and group-id namespace both protocols share. Classic
consumers may be members of a consumer group, and groups move between the protocols with their
members (Kafka's online upgrade and downgrade).
"""
