"""One module per Kafka API, named after it in snake_case (`join_group.py` for JoinGroup).

Each module declares the request and response dataclasses (covering every version we
support), its nested structs under Kafka's names, version notes in its docstring, and
`error_response(request, code, version)`, which builds what Kafka's getErrorResponse builds
for that version: the error code where that API keeps it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protocol.schema import Message

__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "response_class"]

# An authorized-operations field's value when the request did not ask for it (Kafka's
# MetadataResponse / DescribeGroupsResponse.AUTHORIZED_OPERATIONS_OMITTED, Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def response_class(request: type[Message]) -> type[Message]:
    """The response class that answers `request`: `FooResponse`, declared beside
    `FooRequest` in the API's module (Kafka's ApiMessageType pairs them the same way)."""
    module = sys.modules[request.__module__]
    response: type[Message] = getattr(module, request.__name__.removesuffix("Request") + "Response")
    return response
