"""Producer id allocation for InitProducerId, durable across restarts.

Ids are handed out from blocks of PRODUCER_ID_BLOCK_SIZE, as Kafka's controller does: the end
of the current block is written (and fsynced) before any id from it is used, so after a crash
the next start resumes past every id that may have been given out.
"""

from __future__ import annotations

import os
from pathlib import Path

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock size


class ProducerIdAllocator:
    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "producer_ids"
        self._next = int(self._path.read_text().strip()) if self._path.exists() else 0
        self._block_end = self._next

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + PRODUCER_ID_BLOCK_SIZE
            tmp = self._path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                f.write(f"{self._block_end}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path)
        pid = self._next
        self._next += 1
        return pid
