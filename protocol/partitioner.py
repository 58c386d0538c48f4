"""Kafka's default partitioner for keyed records: murmur2 of the key, made positive, modulo
the partition count (BuiltInPartitioner.partitionForKey, Utils.murmur2).

Producers pick partitions, not brokers; it is here, below both, because the command line's
`produce` (through `client`) and the pytest fixture's seed helpers (in `broker`) must place
a keyed record where every Kafka producer would.
"""

from __future__ import annotations

__all__ = ["default_partition", "murmur2"]


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (Utils.murmur2), as a signed 32-bit int."""
    length = len(data)
    seed = 0x9747B28C
    m = 0x5BD1E995
    r = 24
    h = (seed ^ length) & 0xFFFFFFFF
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = int.from_bytes(data[i4 : i4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    extra = length % 4
    tail = length4 * 4
    if extra >= 3:
        h ^= data[tail + 2] << 16
    if extra >= 2:
        h ^= data[tail + 1] << 8
    if extra >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def default_partition(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
