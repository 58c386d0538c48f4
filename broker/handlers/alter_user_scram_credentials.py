"""AlterUserScramCredentials: upsert or delete SCRAM credentials in the store of
broker.security, which is written to the data directory before the answer. Checks, their
order and messages are Kafka's ScramControlManager.alterCredentials: a user named twice in
one request is DUPLICATE_RESOURCE; an empty name or unknown mechanism, iterations outside
4096-16384, or deleting what does not exist fail that user alone."""

from __future__ import annotations

import trio

from broker.context import RequestContext
from broker.security.authenticator import scram_store
from broker.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MIN_ITERATIONS,
    credential_from_salted,
)
from protocol.errors import ErrorCode
from protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)

_BY_CODE = {code: name for name, code in MECHANISM_CODES.items()}
_TWICE = "A user credential cannot be altered twice in the same request"


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in _BY_CODE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


async def handle(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    store = scram_store(ctx.broker)
    deletions: dict[str, ScramCredentialDeletion] = {}
    upserts: dict[str, ScramCredentialUpsertion] = {}
    errors: dict[str, tuple[ErrorCode, str]] = {}
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
        elif (error := _check_name_and_mechanism(d.name, d.mechanism)) is not None:
            errors[d.name] = error
        elif store.get(_BY_CODE[d.mechanism], d.name) is None:
            errors[d.name] = (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        else:
            deletions[d.name] = d
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
        elif (error := _check_name_and_mechanism(u.name, u.mechanism)) is not None:
            errors[u.name] = error
        elif u.iterations < MIN_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upserts[u.name] = u
    results = []
    for d in deletions.values():
        store.set(_BY_CODE[d.mechanism], d.name, None)
        results.append(AlterUserScramCredentialsResult(user=d.name, error_code=0))
    for u in upserts.values():
        mechanism = _BY_CODE[u.mechanism]
        credential = credential_from_salted(mechanism, u.salted_password, u.salt, u.iterations)
        store.set(mechanism, u.name, credential)
        results.append(AlterUserScramCredentialsResult(user=u.name, error_code=0))
    for user, (code, message) in errors.items():
        results.append(
            AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)
        )
    if deletions or upserts:
        await trio.to_thread.run_sync(store.save)
    return AlterUserScramCredentialsResponse(results=results)
