"""A small synchronous Kafka client on kmock's own codec, for the `kmock` admin commands.

One blocking socket with timeouts, one request in flight, and the message dataclasses of
`protocol.messages` encoded and decoded by `protocol.schema` (no third-party Kafka client
at run time). Requests go to the bootstrap address. Against several brokers (kmock.brokers)
a partition request answered NOT_LEADER_OR_FOLLOWER is sent again to the leader Metadata
names, and a group request answered NOT_COORDINATOR to the coordinator FindCoordinator
names, over a connection of its own kept for the client's life; a single broker never
answers either, so nothing else changes.

    with KafkaClient("127.0.0.1:9092") as client:
        client.create_topic("orders", num_partitions=3)
        client.produce("orders", 0, build_batch([(b"k", b"v", (), now_ms)]))

Versions are negotiated once per connection (ApiVersions, KIP-511): each request goes at
the highest version both sides support, capped where this client only speaks the older
shape (Fetch by topic name, not topic id; OffsetFetch for one group). A top-level or
per-partition error in a response is raised as `KafkaError`; a socket failure or timeout as
`ConnectionFailed`.

Security (client.security.ClientSecurity, from the keys of a Kafka client properties file):
TLS wraps the socket before the first request; SASL PLAIN and SCRAM-SHA-256/512 run after
ApiVersions, as SaslHandshake v1 then SaslAuthenticate (client.sasl), before any other
request. The session is not renewed (KIP-368): the admin commands' connections are short.
"""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from client.sasl import SaslProtocolError, ScramClient, plain_token
from client.security import ClientSecurity
from protocol.errors import ErrorCode, KafkaError
from protocol.frames import encode_request, frame_size, parse_response_frame
from protocol.messages import response_class
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreatableTopicResult,
    CreateTopicsRequest,
)
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
)
from protocol.messages.describe_groups import DescribedGroup, DescribeGroupsRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, PartitionData
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.list_groups import ListedGroup, ListGroupsRequest
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.partitioner import default_partition
from protocol.primitives import DecodeError
from protocol.schema import Message, decode

__all__ = [
    "EARLIEST",
    "LATEST",
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "CommittedOffset",
    "ConnectionFailed",
    "KafkaClient",
    "Unreachable",
    "default_partition",
    "parse_host_port",
]

# ListOffsets' special timestamps.
LATEST = -1
EARLIEST = -2
# DescribeConfigs resource types (Kafka's ConfigResource.Type).
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

DEFAULT_CLIENT_ID = "kmock-cli"
# Highest versions this client builds, where the newer shapes would need more than it has.
_VERSION_CAPS = {
    FetchRequest: 12,  # 13+ names topics by id
    ProduceRequest: 12,  # 13+ names topics by id
    OffsetFetchRequest: 7,  # 8+ batches groups
}

_INT16 = struct.Struct(">h")


class ConnectionFailed(Exception):
    """The broker could not be reached, closed the connection, or did not answer in time."""


class Unreachable(ConnectionFailed):
    """No TCP connection to the broker at all."""


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    metadata: str | None


def parse_host_port(address: str, default_port: int = 9092) -> tuple[str, int]:
    """ "host:port" (or "[v6]:port", or "host") -> (host, port); the first of a comma list."""
    first = address.split(",")[0].strip()
    if first.startswith("["):
        host, _, rest = first[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, sep, port = first.rpartition(":")
        if not sep:
            host, port = first, ""
    if not host:
        raise ValueError(f"no host in {address!r}")
    try:
        return host, int(port) if port else default_port
    except ValueError:
        raise ValueError(f"bad port in {address!r}") from None


def _check(code: int, what: str, message: str | None = None) -> None:
    if code:
        raise KafkaError(ErrorCode(code), f"{what}: {message}" if message else what)


class KafkaClient:
    """A blocking connection to one broker. Not thread-safe; use one per thread."""

    def __init__(
        self,
        bootstrap_server: str = "127.0.0.1:9092",
        *,
        timeout_s: float = 30.0,
        client_id: str = DEFAULT_CLIENT_ID,
        security: ClientSecurity | None = None,
    ) -> None:
        self.address = parse_host_port(bootstrap_server)
        self.timeout_s = timeout_s
        self.client_id = client_id
        self.security = security or ClientSecurity()
        self.principal: str | None = None  # "User:alice" once SASL authenticated
        self._sock: socket.socket | None = None
        self._correlation_id = 0
        self.api_versions: dict[int, range] = {}
        # Connections to the other brokers of a cluster, by address (see the module docstring).
        self._peers: dict[tuple[str, int], KafkaClient] = {}

    # --- connection ----------------------------------------------------------------------

    def connect(self) -> None:
        """Connect, negotiate versions, then authenticate if the security settings say so.

        Raises:
          ConnectionFailed: no connection, or the TLS handshake failed (named so).
          KafkaError: SASL refused (SASL_AUTHENTICATION_FAILED with the broker's message,
            UNSUPPORTED_SASL_MECHANISM, ...); the connection is closed.
          ValueError: a truststore or keystore that cannot be read, naming its setting.
        """
        host, port = self.address
        context = self.security.ssl_context() if self.security.uses_tls else None
        try:
            self._sock = socket.create_connection((host, port), timeout=self.timeout_s)
        except OSError as e:
            raise Unreachable(f"cannot connect to {host}:{port}: {_reason(e)}") from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if context is not None:
            try:
                self._sock = context.wrap_socket(self._sock, server_hostname=host)
            except (ssl.SSLError, ssl.CertificateError, OSError) as e:
                self.close()
                raise ConnectionFailed(
                    f"TLS handshake with {host}:{port} failed: {_tls_reason(e)}"
                ) from None
        self._negotiate()
        if self.security.uses_sasl:
            try:
                self._authenticate()
            except BaseException:
                self.close()
                raise

    def _authenticate(self) -> None:
        """SaslHandshake v1, then SaslAuthenticate rounds (Kafka's SaslClientAuthenticator:
        the handshake names the mechanism; the tokens travel in SaslAuthenticate)."""
        mechanism = self.security.sasl_mechanism or "PLAIN"
        user, password = self.security.username or "", self.security.password or ""
        what = f"SASL {mechanism} authentication as {user!r} to {self._name()}"
        handshake = self.send(SaslHandshakeRequest(mechanism=mechanism), 1)
        if handshake.error_code:
            offered = ", ".join(handshake.mechanisms) or "none"
            raise KafkaError(
                ErrorCode(handshake.error_code),
                f"{what}: the broker enables {offered} (sasl.enabled.mechanisms)",
            )

        def exchange(token: bytes) -> bytes:
            response = self.send(SaslAuthenticateRequest(auth_bytes=token))
            if response.error_code:
                raise KafkaError(
                    ErrorCode(response.error_code),
                    f"{what} failed: {response.error_message or 'no message'}",
                )
            return bytes(response.auth_bytes)

        try:
            if mechanism == "PLAIN":
                exchange(plain_token(user, password))
            else:
                scram = ScramClient(mechanism, user, password)
                scram.verify(exchange(scram.final(exchange(scram.first()))))
        except SaslProtocolError as e:
            raise KafkaError(ErrorCode.SASL_AUTHENTICATION_FAILED, f"{what}: {e}") from None
        self.principal = f"User:{user}"

    def close(self) -> None:
        for peer in self._peers.values():
            peer.close()
        self._peers.clear()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    # --- other brokers -------------------------------------------------------------------

    def _at(self, host: str, port: int) -> KafkaClient:
        """The client for the broker at host:port: this one, or a peer connected on need."""
        if (host, port) == self.address:
            return self
        peer = self._peers.get((host, port))
        if peer is None:
            peer = KafkaClient(f"{host}:{port}", timeout_s=self.timeout_s, client_id=self.client_id)
            peer.connect()
            self._peers[(host, port)] = peer
        return peer

    def _leaders(self, topic: str) -> dict[int, KafkaClient]:
        """A client for the leader of each partition of `topic` that has one."""
        response = self.metadata([topic])
        brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        return {
            p.partition_index: self._at(*brokers[p.leader_id])
            for t in response.topics
            for p in t.partitions
            if p.leader_id in brokers
        }

    def _coordinated(self, group_id: str, call: Any) -> Any:
        """`call(client)` at this broker, then once more at the group's coordinator if this
        one is not it."""
        try:
            return call(self)
        except KafkaError as e:
            if e.code != ErrorCode.NOT_COORDINATOR:
                raise
        request = FindCoordinatorRequest(key=group_id, key_type=0, coordinator_keys=[group_id])
        version = self.version_for(FindCoordinatorRequest)
        response = self.send(request, version)
        found = response.coordinators[0] if version >= 4 else response
        _check(found.error_code, f"coordinator of {group_id!r}", found.error_message)
        return call(self._at(found.host, found.port))

    def __enter__(self) -> KafkaClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _negotiate(self) -> None:
        # KIP-511: a broker that does not know our ApiVersions version answers
        # UNSUPPORTED_VERSION in the v0 layout; read the error code before the body.
        version = ApiVersionsRequest.VERSIONS.stop - 1
        frame, pos = self._roundtrip(
            ApiVersionsRequest(client_software_name="kmock-cli", client_software_version="0.1"),
            version,
        )
        (code,) = _INT16.unpack_from(frame, pos)
        if code == ErrorCode.UNSUPPORTED_VERSION:
            version = 0
        response: ApiVersionsResponse = self._decode(ApiVersionsResponse, version, frame, pos)
        _check(response.error_code, "ApiVersions")
        self.api_versions = {
            k.api_key: range(k.min_version, k.max_version + 1) for k in response.api_keys
        }

    def version_for(self, request_cls: type[Message]) -> int:
        """The highest version of `request_cls` that this client and the broker share.

        Raises:
          KafkaError: UNSUPPORTED_VERSION when there is none.
        """
        ours = request_cls.VERSIONS
        theirs = self.api_versions.get(request_cls.API_KEY, range(0))
        top = min(ours.stop - 1, theirs.stop - 1, _VERSION_CAPS.get(request_cls, 1 << 15))
        if top < max(ours.start, theirs.start):
            name = request_cls.__name__.removesuffix("Request")
            raise KafkaError(
                ErrorCode.UNSUPPORTED_VERSION,
                f"the broker does not serve {name} at a version this client speaks",
            )
        return top

    # --- one request ---------------------------------------------------------------------

    def send(self, request: Message, version: int | None = None) -> Any:
        """Send `request` (at the negotiated version unless given) and return the response."""
        if version is None:
            version = self.version_for(type(request))
        frame, pos = self._roundtrip(request, version)
        return self._decode(response_class(type(request)), version, frame, pos)

    def _roundtrip(self, request: Message, version: int) -> tuple[bytes, int]:
        if self._sock is None:
            raise ConnectionFailed("not connected")
        self._correlation_id += 1
        data = encode_request(request, version, self._correlation_id, self.client_id)
        try:
            self._sock.sendall(data)
            prefix = self._receive(4)
            frame = self._receive(frame_size(prefix))
            correlation_id, pos = parse_response_frame(
                response_class(type(request)), version, frame
            )
        except OSError as e:
            self.close()
            raise ConnectionFailed(f"{self._name()}: {_reason(e)}") from None
        except DecodeError as e:
            self.close()
            raise ConnectionFailed(f"{self._name()}: unreadable response header: {e}") from None
        if correlation_id != self._correlation_id:
            self.close()
            raise ConnectionFailed(
                f"{self._name()}: response for request {correlation_id}, "
                f"expected {self._correlation_id}"
            )
        return frame, pos

    def _receive(self, n: int) -> bytes:
        assert self._sock is not None
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionResetError("connection closed by the broker")
            buf += chunk
        return bytes(buf)

    def _decode(self, cls: type[Message], version: int, frame: bytes, pos: int) -> Any:
        try:
            return decode(cls, version, frame, pos)
        except DecodeError as e:
            self.close()
            raise ConnectionFailed(f"unreadable {cls.__name__} v{version}: {e}") from None

    def _name(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def _set_timeout(self, seconds: float) -> None:
        if self._sock is not None:
            self._sock.settimeout(seconds)

    # --- topics --------------------------------------------------------------------------

    def metadata(
        self, topics: Iterable[str] | None = None, *, allow_auto_topic_creation: bool = False
    ) -> MetadataResponse:
        """Brokers and topics; `topics=None` lists every topic.

        Raises:
          ConnectionFailed: an answer without any broker. A broker always lists itself; it
            lists none in the error response to a request it refuses whole, as a SASL
            listener refuses any request before authentication (ILLEGAL_SASL_STATE, whose
            code Metadata has no top-level place for), before it closes the connection.
        """
        wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
        response: MetadataResponse = self.send(
            MetadataRequest(topics=wanted, allow_auto_topic_creation=allow_auto_topic_creation)
        )
        if not response.brokers:
            self.close()
            raise ConnectionFailed(
                f"{self._name()}: Metadata answered without any broker: the request was "
                "refused (a SASL listener refuses requests before authentication)"
            )
        return response

    def partition_count(self, topic: str, *, allow_auto_topic_creation: bool = False) -> int:
        """Partitions of `topic`. Raises KafkaError (UNKNOWN_TOPIC_OR_PARTITION, ...)."""
        response = self.metadata([topic], allow_auto_topic_creation=allow_auto_topic_creation)
        for t in response.topics:
            if t.name == topic:
                _check(t.error_code, f"topic {topic!r}")
                return len(t.partitions)
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r}")

    def create_topics(
        self,
        names: Iterable[str],
        *,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> list[CreatableTopicResult]:
        """Create several topics in one request; each result carries its own error code
        (not raised: Kafka creates the topics that pass and refuses the others)."""
        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=name,
                    num_partitions=num_partitions,
                    replication_factor=replication_factor,
                    assignments=[],
                    configs=[
                        CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
                    ],
                )
                for name in names
            ],
            timeout_ms=int(self.timeout_s * 1000),
            validate_only=validate_only,
        )
        return list(self.send(request).topics)

    def create_topic(
        self,
        name: str,
        *,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> CreatableTopicResult:
        """Create one topic (-1: the broker's num.partitions / default.replication.factor)."""
        (result,) = self.create_topics(
            [name],
            num_partitions=num_partitions,
            replication_factor=replication_factor,
            configs=configs,
            validate_only=validate_only,
        )
        _check(result.error_code, f"create topic {name!r}", result.error_message)
        return result

    def delete_topic(self, name: str) -> None:
        for _, code, message in self.delete_topics([name]):
            _check(code, f"delete topic {name!r}", message)

    def delete_topics(self, names: Iterable[str]) -> list[tuple[str, int, str | None]]:
        """Delete several topics in one request: (name, error code, error message) each,
        not raised."""
        names = list(names)
        version = self.version_for(DeleteTopicsRequest)
        timeout_ms = int(self.timeout_s * 1000)
        if version >= 6:
            request = DeleteTopicsRequest(
                topics=[DeleteTopicState(name=n) for n in names], timeout_ms=timeout_ms
            )
        else:
            request = DeleteTopicsRequest(topic_names=names, timeout_ms=timeout_ms)
        response = self.send(request, version)
        return [(r.name, r.error_code, r.error_message) for r in response.responses]

    def describe_configs(
        self, resource_type: int, name: str
    ) -> list[DescribeConfigsResourceResult]:
        response = self.send(
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(
                        resource_type=resource_type, resource_name=name, configuration_keys=None
                    )
                ],
                include_synonyms=False,
                include_documentation=False,
            )
        )
        result = response.results[0]
        _check(result.error_code, f"describe configs of {name!r}", result.error_message)
        return list(result.configs)

    # --- groups and offsets --------------------------------------------------------------

    def list_groups(self) -> list[ListedGroup]:
        response = self.send(ListGroupsRequest())
        _check(response.error_code, "ListGroups")
        return list(response.groups)

    def describe_group(self, group_id: str) -> DescribedGroup:
        """The group's state and members; an unknown group comes back in state Dead."""

        def describe(client: KafkaClient) -> DescribedGroup:
            response = client.send(DescribeGroupsRequest(groups=[group_id]))
            group: DescribedGroup = response.groups[0]
            if group.error_code != ErrorCode.GROUP_ID_NOT_FOUND:  # v6+ (KIP-1043): still Dead
                _check(group.error_code, f"group {group_id!r}")
            return group

        return self._coordinated(group_id, describe)  # type: ignore[no-any-return]

    def committed_offsets(
        self, group_id: str, partitions: Mapping[str, Iterable[int]] | None = None
    ) -> dict[tuple[str, int], CommittedOffset]:
        """The group's committed offsets (all of them when `partitions` is None).

        Partitions without a committed offset are left out.
        """
        topics = (
            None
            if partitions is None
            else [
                OffsetFetchRequestTopic(name=t, partition_indexes=list(ps))
                for t, ps in partitions.items()
            ]
        )
        request = OffsetFetchRequest(group_id=group_id, topics=topics)

        def fetch(client: KafkaClient) -> Any:
            answer = client.send(request)
            _check(answer.error_code, f"offsets of group {group_id!r}")
            return answer

        response = self._coordinated(group_id, fetch)
        out = {}
        for t in response.topics:
            for p in t.partitions:
                _check(p.error_code, f"offset of {group_id!r} on {t.name}-{p.partition_index}")
                if p.committed_offset >= 0:
                    out[(t.name, p.partition_index)] = CommittedOffset(
                        p.committed_offset, p.metadata
                    )
        return out

    def commit_offsets(self, group_id: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit as a standalone consumer (generation -1, no member id): the group must be
        empty, as for kafka-consumer-groups --reset-offsets."""
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=partition, committed_offset=offset, committed_metadata=""
                )
            )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

        def commit(client: KafkaClient) -> None:
            response = client.send(request)
            for t in response.topics:
                for p in t.partitions:
                    _check(p.error_code, f"commit for {group_id!r} on {t.name}-{p.partition_index}")

        self._coordinated(group_id, commit)

    def list_offsets(
        self, partitions: Iterable[tuple[str, int]], timestamp: int, *, raise_errors: bool = True
    ) -> dict[tuple[str, int], int]:
        """The offset for `timestamp` (LATEST, EARLIEST, or ms) of each (topic, partition);
        -1 where no record has a timestamp at or after the one asked for. With
        `raise_errors=False`, partitions answered with an error are left out."""
        by_topic: dict[str, list[ListOffsetsPartition]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(
                ListOffsetsPartition(partition_index=partition, timestamp=timestamp)
            )
        if not by_topic:
            return {}
        response = self.send(
            ListOffsetsRequest(
                replica_id=-1,
                topics=[ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )
        out = {}
        for t in response.topics:
            elsewhere = [
                p.partition_index
                for p in t.partitions
                if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            ]
            leaders = self._leaders(t.name) if elsewhere else {}
            for p in t.partitions:
                leader = leaders.get(p.partition_index)
                if p.partition_index in elsewhere and leader not in (None, self):
                    assert leader is not None
                    out.update(
                        leader.list_offsets(
                            [(t.name, p.partition_index)], timestamp, raise_errors=raise_errors
                        )
                    )
                    continue
                if p.error_code and not raise_errors:
                    continue
                _check(p.error_code, f"offsets of {t.name}-{p.partition_index}")
                out[(t.name, p.partition_index)] = p.offset
        return out

    # --- records -------------------------------------------------------------------------

    def produce(self, topic: str, partition: int, batch: bytes, *, acks: int = -1) -> int:
        """Append one record batch (see protocol.records.build_batch); returns its base offset."""
        response = self.send(
            ProduceRequest(
                acks=acks,
                timeout_ms=int(self.timeout_s * 1000),
                topic_data=[
                    TopicProduceData(
                        name=topic,
                        partition_data=[PartitionProduceData(index=partition, records=batch)],
                    )
                ],
            )
        )
        result = response.responses[0].partition_responses[0]
        if result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            leader = self._leaders(topic).get(partition)
            if leader is not None and leader is not self:
                return leader.produce(topic, partition, batch, acks=acks)
        _check(result.error_code, f"produce to {topic}-{partition}", result.error_message)
        return int(result.base_offset)

    def fetch(
        self,
        topic: str,
        offsets: Mapping[int, int],
        *,
        max_wait_ms: int = 500,
        max_bytes: int = 8 * 1024 * 1024,
        partition_max_bytes: int = 1024 * 1024,
    ) -> dict[int, PartitionData]:
        """Fetch from each partition at its offset; returns the raw partition data by index.

        Per-partition errors are left in `error_code` (OFFSET_OUT_OF_RANGE is the caller's
        to handle); `records` is concatenated batches (protocol.records.iter_batches).
        """
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(
                            partition=p, fetch_offset=o, partition_max_bytes=partition_max_bytes
                        )
                        for p, o in sorted(offsets.items())
                    ],
                )
            ],
        )
        self._set_timeout(self.timeout_s + max_wait_ms / 1000)
        try:
            response = self.send(request)
        finally:
            self._set_timeout(self.timeout_s)
        _check(response.error_code, f"fetch from {topic}")
        out = {p.partition_index: p for t in response.responses for p in t.partitions}
        elsewhere = {
            i: offsets[i]
            for i, p in out.items()
            if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        }
        if elsewhere:
            by_leader: dict[KafkaClient, dict[int, int]] = {}
            leaders = self._leaders(topic)
            for i, offset in elsewhere.items():
                leader = leaders.get(i)
                if leader is not None and leader is not self:
                    by_leader.setdefault(leader, {})[i] = offset
            for leader, wanted in by_leader.items():
                out.update(
                    leader.fetch(
                        topic,
                        wanted,
                        max_wait_ms=0,
                        max_bytes=max_bytes,
                        partition_max_bytes=partition_max_bytes,
                    )
                )
        return out


def _tls_reason(e: Exception) -> str:
    if isinstance(e, ssl.SSLCertVerificationError):
        return (
            f"certificate verify failed: {e.verify_message} "
            "(see ssl.truststore.* and ssl.endpoint.identification.algorithm)"
        )
    if isinstance(e, ssl.SSLError):
        return str(e.reason or e)
    if isinstance(e, OSError):
        return _reason(e)
    return str(e)


def _reason(e: OSError) -> str:
    if isinstance(e, TimeoutError | socket.timeout):
        return "timed out"
    return e.strerror or str(e) or e.__class__.__name__
