"""SaslHandshake, SaslAuthenticate, DescribeUserScramCredentials and AlterUserScramCredentials:
round trips at every version and the bytes of the grammar where versions differ."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.messages.alter_user_scram_credentials import error_response as alter_error
from protocol.messages.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
    UserName,
)
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from protocol.schema import encode
from tests.protocol.roundtrip import assert_roundtrip

CASES = [
    (SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), range(2)),
    (SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN", "SCRAM-SHA-512"]), range(2)),
    (SaslAuthenticateRequest(auth_bytes=b"\0alice\0pw"), range(3)),
    (
        SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
            error_message="Authentication failed: Invalid username or password",
            auth_bytes=b"",
            session_lifetime_ms=3600000,
        ),
        range(3),
    ),
    (DescribeUserScramCredentialsRequest(users=None), range(1)),
    (DescribeUserScramCredentialsRequest(users=[UserName(name="alice")]), range(1)),
    (
        DescribeUserScramCredentialsResponse(
            error_code=0,
            results=[
                DescribeUserScramCredentialsResult(
                    user="alice",
                    error_code=0,
                    credential_infos=[CredentialInfo(mechanism=2, iterations=4096)],
                )
            ],
        ),
        range(1),
    ),
    (
        AlterUserScramCredentialsRequest(
            deletions=[ScramCredentialDeletion(name="a", mechanism=1)],
            upsertions=[
                ScramCredentialUpsertion(
                    name="b", mechanism=2, iterations=8192, salt=b"s", salted_password=b"p"
                )
            ],
        ),
        range(1),
    ),
    (
        AlterUserScramCredentialsResponse(
            results=[AlterUserScramCredentialsResult(user="a", error_code=91, error_message="x")]
        ),
        range(1),
    ),
]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_sasl_authenticate_response_grammar():
    response = SaslAuthenticateResponse(
        error_code=0, error_message=None, auth_bytes=b"ab", session_lifetime_ms=5
    )
    assert encode(response, 0).hex() == "0000" + "ffff" + "00000002" + "6162"
    assert encode(response, 1).hex() == "0000ffff000000026162" + "0000000000000005"
    # v2: compact nullable string (0 = null), compact bytes (length + 1), empty tag buffer
    assert encode(response, 2).hex() == "0000" + "00" + "03" + "6162" + "0000000000000005" + "00"


def test_alter_error_response_names_each_user_once():
    request = AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name="a", mechanism=1)],
        upsertions=[
            ScramCredentialUpsertion(
                name="a", mechanism=2, iterations=4096, salt=b"", salted_password=b""
            )
        ],
    )
    response = alter_error(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 0)
    assert [(r.user, r.error_code) for r in response.results] == [
        ("a", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    ]
