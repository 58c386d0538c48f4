"""Named listeners, as Kafka configures them: `listeners`, `listener.security.protocol.map`,
`advertised.listeners` and `inter.broker.listener.name`.

    listeners=PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT
    advertised.listeners=PLAINTEXT://kmock:29092,PLAINTEXT_HOST://localhost:9092

Each listener has a name; the map gives each name its security protocol (Kafka's default
map names the four protocols after themselves, so `PLAINTEXT://...` needs no entry). A
client that connects through a listener is told that listener's advertised address in
Metadata, FindCoordinator and DescribeCluster: an app container that bootstraps from
`kmock:29092` keeps talking to `kmock:29092`, the host from `localhost:9092` to
`localhost:9092` (Kafka's KafkaApis asks MetadataCache.getAliveBrokerNode(id,
request.context.listenerName)).

When advertised.listeners is set, only the listeners it names are advertised, as in Kafka
(KafkaConfig.effectiveAdvertisedBrokerListeners): a client that comes in through another
listener is told of no broker (Metadata: LISTENER_NOT_FOUND for the partitions;
FindCoordinator: COORDINATOR_NOT_AVAILABLE). Unset, every listener advertises itself, a
wildcard host (0.0.0.0, ::, empty) becoming 127.0.0.1; an advertised port 0 means the
port the listener bound (kmock only: for port 0 in tests).

The checks and their messages are Kafka's (EndpointUtils.listenerListToEndpoints,
KafkaConfig.validateValues), each prefixed by the setting it is about. All four of
Kafka's protocols are served: SSL, SASL_PLAINTEXT and SASL_SSL through broker.security.
`inter.broker.listener.name` is accepted and checked as Kafka checks it, and otherwise
unused (several brokers share one process: broker.cluster_state); unset, Kafka derives it from
security.inter.broker.protocol and requires a PLAINTEXT listener, which kmock does not.
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple

__all__ = [
    "DEFAULT_PROTOCOL_MAP",
    "Endpoint",
    "ListenerSetup",
    "listener_setup",
    "parse_endpoints",
    "parse_protocol_map",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
# Kafka's EndpointUtils.uriParseExp
_URI = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")
_WILDCARDS = ("", "0.0.0.0", "::")


# NamedTuples rather than frozen dataclasses: made in a fifth of the time, at every start.
class Endpoint(NamedTuple):
    listener: str  # the listener name, upper case
    host: str  # "" = every interface
    port: int
    security_protocol: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


class ListenerSetup(NamedTuple):
    # In the order given: the first is the fixture's. With kmock.brokers, each broker binds
    # every one at its port + the broker's rank (broker.server.bind_node).
    listeners: tuple[Endpoint, ...]
    advertised: dict[str, Endpoint]  # by listener name; port 0 = the bound port
    inter_broker_listener_name: str | None


def parse_protocol_map(spec: str) -> dict[str, str]:
    """ "PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT" -> {"PLAINTEXT": "PLAINTEXT", "HOST": "PLAINTEXT"}.

    Raises:
      ValueError: the message names listener.security.protocol.map.
    """
    out: dict[str, str] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or not protocol:
            raise ValueError(
                f"listener.security.protocol.map: {item!r} is not LISTENER_NAME:PROTOCOL"
            )
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"listener.security.protocol.map: {protocol!r} (for listener {name}) is not a "
                f"security protocol; Kafka's are {', '.join(SECURITY_PROTOCOLS)}"
            )
        if name in out:
            raise ValueError(f"listener.security.protocol.map: listener {name} is mapped twice")
        out[name] = protocol
    return out


def parse_endpoints(
    spec: str, protocol_map: dict[str, str], setting: str, *, require_distinct_ports: bool
) -> list[Endpoint]:
    """Kafka's EndpointUtils.listenerListToEndpoints for the setting `setting`.

    Raises:
      ValueError: with Kafka's message, prefixed by `setting`.
    """
    endpoints = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        m = _URI.match(item)
        if m is None:
            raise ValueError(
                f"{setting}: Error creating broker listeners from '{spec}': Unable to parse "
                f"{item} to a broker endpoint (expected NAME://host:port)"
            )
        name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not 0 <= port <= 65535:
            raise ValueError(f"{setting}: port {port} of {item} is out of range")
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ValueError(
                f"{setting}: Error creating broker listeners from '{spec}': No security "
                f"protocol defined for listener {name} (add {name}:PLAINTEXT to "
                "listener.security.protocol.map)"
            )
        endpoints.append(Endpoint(name, host, port, protocol))
    if not endpoints:
        raise ValueError(f"{setting}: no listener configured")
    _validate(endpoints, spec, setting, require_distinct_ports)
    return endpoints


def _is_ip(host: str) -> int | None:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _validate(endpoints: list[Endpoint], spec: str, setting: str, distinct_ports: bool) -> None:
    """EndpointUtils.validate: distinct names; distinct ports (port 0 aside) unless exactly
    two listeners share one, an IPv4 and an IPv6 address."""
    if len({e.listener for e in endpoints}) != len(endpoints):
        raise ValueError(f"{setting}: Each listener must have a different name, listeners: {spec}")
    if not distinct_ports:
        return
    by_port: dict[int, list[Endpoint]] = {}
    for e in endpoints:
        if e.port != 0:
            by_port.setdefault(e.port, []).append(e)
    for port, same in by_port.items():
        if len(same) < 2:
            continue
        versions = [_is_ip(e.host) for e in same]
        if None in versions:
            raise ValueError(
                f"{setting}: Each listener must have a different port, listeners: {spec}"
            )
        if len(same) > 2:
            raise ValueError(
                f"{setting}: Each listener must have a different port unless exactly one "
                "listener has an IPv4 address and the other IPv6 address, listeners: "
                f"{spec}, port: {port}"
            )
        if sorted(versions) != [4, 6]:  # type: ignore[type-var]
            raise ValueError(
                f"{setting}: If you have two listeners on the same port then one needs to be "
                f"IPv4 and the other IPv6, listeners: {spec}, port: {port}"
            )


def listener_setup(
    listeners: str,
    advertised_listeners: str | None,
    protocol_map: str,
    inter_broker_listener_name: str | None,
) -> ListenerSetup:
    """The listeners to bind and the address each advertises, checked as Kafka checks them.

    Raises:
      ValueError: one message, naming the setting at fault.
    """
    pmap = parse_protocol_map(protocol_map)
    bound = parse_endpoints(listeners, pmap, "listeners", require_distinct_ports=True)
    names = [e.listener for e in bound]
    if advertised_listeners:
        adv = parse_endpoints(
            advertised_listeners, pmap, "advertised.listeners", require_distinct_ports=False
        )
        unknown = [e.listener for e in adv if e.listener not in names]
        if unknown:
            raise ValueError(
                "advertised.listeners listener names must be equal to or a subset of the ones "
                f"defined in listeners. Found {','.join(e.listener for e in adv)}. The valid "
                f"options based on the current configuration are {','.join(names)}"
            )
        if any(e.host == "0.0.0.0" for e in adv):
            raise ValueError(
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                "Use a routable IP address."
            )
        advertised = {e.listener: e for e in adv}
    else:
        advertised = {
            e.listener: Endpoint(
                e.listener,
                "127.0.0.1" if e.host in _WILDCARDS else e.host,
                e.port,
                e.security_protocol,
            )
            for e in bound
        }
    ibl = (inter_broker_listener_name or "").strip().upper() or None
    if ibl is not None and ibl not in advertised:
        raise ValueError(
            "inter.broker.listener.name must be a listener name defined in "
            "advertised.listeners. The valid options based on currently configured listeners "
            f"are {','.join(advertised)}"
        )
    return ListenerSetup(tuple(bound), advertised, ibl)
