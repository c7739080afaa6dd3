"""Partition replicas on this broker: leader state, high watermark, delayed operations."""
