"""Start-time and memory floor: python + trio + one TCP listener and nothing else.

`python bench/trio_floor.py PORT` listens on 127.0.0.1:PORT and closes every connection.
Used as the side-by-side reference for kmock's start time and idle RSS.
"""

from __future__ import annotations

import contextlib
import sys

import trio


async def _handler(stream: trio.SocketStream) -> None:
    await stream.aclose()


async def main(port: int) -> None:
    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    await trio.serve_listeners(_handler, listeners)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        trio.run(main, int(sys.argv[1]))
