"""DescribeUserScramCredentials (key 50): the SCRAM mechanisms and iteration counts of users
(never their keys). Spec: DescribeUserScramCredentialsRequest.json / ...Response.json.
Version 0 only, flexible. `users` null or empty: every user with a credential.
Mechanism codes are Kafka's ScramMechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int8, Int16, Int32, Message, String, Struct, wire


class UserName(Struct):
    name: str = wire(String)


class DescribeUserScramCredentialsRequest(Message):
    API_KEY = 50
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    users: list[UserName] | None = wire(Array(UserName), nullable=True, default=None)


class CredentialInfo(Struct):
    mechanism: int = wire(Int8)
    iterations: int = wire(Int32)


class DescribeUserScramCredentialsResult(Struct):
    user: str = wire(String)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    credential_infos: list[CredentialInfo] = wire(Array(CredentialInfo))


class DescribeUserScramCredentialsResponse(Message):
    API_KEY = 50
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    results: list[DescribeUserScramCredentialsResult] = wire(
        Array(DescribeUserScramCredentialsResult)
    )


def error_response(
    request: DescribeUserScramCredentialsRequest, code: ErrorCode, version: int
) -> DescribeUserScramCredentialsResponse:
    """The code at the top level, no results (Kafka's getErrorResponse)."""
    return DescribeUserScramCredentialsResponse(error_code=code, results=[])
