"""`kmock serve` with its segment writes skipped: a diagnostic for bench §2, never a mode of kmock.

    python bench/kmock_nowrite.py serve ...   (the same arguments as `kmock serve`)

Everything a Produce costs kmock runs as usual (receiving the frame, decoding it, checking
each batch's CRC and the producer's sequence, assigning offsets, indexing, group commit,
answering) except the one write of the batches' bytes into the segment file: no byte reaches
the page cache, so a fetch would find nothing; §2 runs only its produce phase against it. Set
beside the librdkafka mock (which keeps nothing either) and kmock itself, it splits kmock's
gap to the mock into its protocol work and the cost of storing what it acknowledges.
"""

from __future__ import annotations

import sys

import storage.segment
from cli.main import main


def _skip_write(fd: int, parts: list[bytes | bytearray | memoryview], total: int = -1) -> None:
    return None  # the signature of storage.segment.write_all


storage.segment.write_all = _skip_write  # Segment.append's only write of batch bytes

if __name__ == "__main__":
    sys.exit(main())
