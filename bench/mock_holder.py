"""Hold the librdkafka mock cluster (one broker) in this process until stdin closes.

Prints the mock's bootstrap address on stdout, then blocks. The mock runs on librdkafka's
own threads inside this process; the benchmark clients connect to it over loopback, the
same shape as a kmock process (PERF-NOTES §5, "separate process").
"""

from __future__ import annotations

import signal
import sys

from confluent_kafka import Producer


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    p = Producer({"test.mock.num.brokers": 1})
    brokers = p.list_topics(timeout=10).brokers
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers.values())
    print(bootstrap, flush=True)
    sys.stdin.read()  # until the orchestrator closes our stdin (or SIGTERM)


if __name__ == "__main__":
    main()
