"""The KRaft controller: decides topic, partition, config, broker and producer-id changes as
metadata records, and the node wiring that commits them through raft into the image."""
