"""Kafka's wire protocol: bytes in, Python values out, and back.

Owns: framing, request/response headers, every supported API message for every supported
version (declared once in `protocol.messages`), RecordBatch v2, compression, CRC32C, the
error table and the `__consumer_offsets` record formats; Kafka's default partitioner
(partitioner) and the text formats records are written in for `kmock produce` and the
pytest fixture's seed helpers (record_file), which the command line and the broker share.
Must not import: trio, `coordinator`, `storage`, `broker`; it knows nothing of behaviour.
"""
