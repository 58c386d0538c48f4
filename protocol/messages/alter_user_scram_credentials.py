"""AlterUserScramCredentials (key 51): add, replace or delete users' SCRAM credentials. The
client sends the salted password (never the password). Spec:
AlterUserScramCredentialsRequest.json / ...Response.json. Version 0 only, flexible.
Mechanism codes are Kafka's ScramMechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bytes, Int8, Int16, Int32, Message, String, Struct, wire


class ScramCredentialDeletion(Struct):
    name: str = wire(String)
    mechanism: int = wire(Int8)


class ScramCredentialUpsertion(Struct):
    name: str = wire(String)
    mechanism: int = wire(Int8)
    iterations: int = wire(Int32)
    salt: bytes = wire(Bytes)
    salted_password: bytes = wire(Bytes)


class AlterUserScramCredentialsRequest(Message):
    API_KEY = 51
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    deletions: list[ScramCredentialDeletion] = wire(Array(ScramCredentialDeletion))
    upsertions: list[ScramCredentialUpsertion] = wire(Array(ScramCredentialUpsertion))


class AlterUserScramCredentialsResult(Struct):
    user: str = wire(String)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)


class AlterUserScramCredentialsResponse(Message):
    API_KEY = 51
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    results: list[AlterUserScramCredentialsResult] = wire(Array(AlterUserScramCredentialsResult))


def error_response(
    request: AlterUserScramCredentialsRequest, code: ErrorCode, version: int
) -> AlterUserScramCredentialsResponse:
    """Every user of the request with the code (Kafka's getErrorResponse)."""
    users = dict.fromkeys(
        [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    )
    return AlterUserScramCredentialsResponse(
        results=[AlterUserScramCredentialsResult(user=u, error_code=code) for u in users]
    )
