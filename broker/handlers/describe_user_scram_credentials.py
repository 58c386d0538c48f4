"""DescribeUserScramCredentials: the mechanisms and iterations of the SCRAM users, from the
store of broker.security (Kafka's ScramImage.describe, messages included)."""

from __future__ import annotations

from broker.context import RequestContext
from broker.security.authenticator import scram_store
from broker.security.scram import MECHANISM_CODES
from protocol.errors import ErrorCode
from protocol.messages.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)


async def handle(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    store = scram_store(ctx.broker)
    duplicated: dict[str, bool] = {}
    if not request.users:
        for users in store.users.values():
            duplicated.update(dict.fromkeys(users, False))
    else:
        for u in request.users:
            duplicated[u.name] = u.name in duplicated
    results = []
    for user, twice in duplicated.items():
        if twice:
            results.append(
                DescribeUserScramCredentialsResult(
                    user=user,
                    error_code=ErrorCode.DUPLICATE_RESOURCE,
                    error_message="Cannot describe SCRAM credentials for the same user twice "
                    f"in a single request: {user}",
                    credential_infos=[],
                )
            )
            continue
        infos = [
            CredentialInfo(mechanism=code, iterations=credential.iterations)
            for mechanism, code in MECHANISM_CODES.items()
            if (credential := store.get(mechanism, user)) is not None
        ]
        if infos:
            results.append(
                DescribeUserScramCredentialsResult(user=user, error_code=0, credential_infos=infos)
            )
        else:
            results.append(
                DescribeUserScramCredentialsResult(
                    user=user,
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message="Attempt to describe a user credential that does not exist: "
                    f"{user}",
                    credential_infos=[],
                )
            )
    return DescribeUserScramCredentialsResponse(error_code=0, results=results)
