"""Test controls: fault injection, a virtual clock, the request journal, connections.

Off unless the admin endpoint is enabled (`admin.port`, bound to 127.0.0.1 by default):
tests in any language drive them over HTTP/JSON (broker.controls.api, docs/controls.md),
`kmock faults|clock|journal|connections` from a shell, the pytest fixture as methods.

    clock.py    the Clock every broker timer waits on; VirtualClock moves when advanced
    faults.py   the fault table the dispatch site consults (one truth test when empty)
    disk.py     storage faults: the next append or fsync fails at the OS boundary
    journal.py  the bounded ring of requests and answers, summarised when read
    summary.py  the key fields of any message, by Kafka's names (never values or bytes)
    api.py      the /v1 paths of the admin endpoint

The Broker (broker.broker) owns one clock, one fault table and one journal; `Controls`
adds what needs the running broker: the route table and the connections being served.
"""

from __future__ import annotations

from typing import Any

from broker.controls.faults import ControlError, Fault

__all__ = ["ControlError", "Controls"]

_CLOSE_FILTERS = ("connection", "client_id", "address")


class Controls:
    def __init__(self, broker: Any) -> None:
        self.broker = broker  # broker.broker.Broker, which imports this package
        # The route table (broker.routes.all_routes()), set by broker.server.serve: the
        # routes import every handler, and the handlers import the Broker.
        self.route_table: list[Any] = []

    @property
    def faults(self) -> Any:
        return self.broker.faults

    def routes(self) -> list[Any]:
        return self.route_table

    def add_fault(self, fault: Fault) -> Fault:
        self.broker.faults.add(fault)
        if fault.storage is not None:
            from broker.controls import disk

            disk.arm(self.broker.data_dir, self.broker.faults.storage)
        return fault

    def connections(self) -> list[Any]:
        return sorted(self.broker.connections, key=lambda c: c.connection_id)

    def close_connections(self, spec: Any) -> list[dict[str, Any]]:
        """Close the connections matching every filter given ({}: all); what was closed.

        Raises:
          ControlError: not an object, an unknown filter, a filter of the wrong type.
        """
        if not isinstance(spec, dict):
            raise ControlError("body", "expected a JSON object")
        for name, value in spec.items():
            if name not in _CLOSE_FILTERS:
                raise ControlError(name, f"unknown filter (known: {', '.join(_CLOSE_FILTERS)})")
            want = int if name == "connection" else str
            if isinstance(value, bool) or not isinstance(value, want):
                raise ControlError(name, f"expected {want.__name__}, not {value!r}")
        closed = []
        for conn in self.connections():
            info = conn.describe()
            if all(info.get(name) == value for name, value in spec.items()):
                conn.close_idle("closed by POST /v1/connections/close")
                closed.append(info)
        return closed
