"""DescribeGroups of classic groups (Kafka 4.x's GroupMetadataManager.describeGroups): a
query over the facade's group map, kept apart from the facade (coordinator.coordinator)."""

from __future__ import annotations

from collections.abc import Container, Mapping

from coordinator.classic.group import Group
from coordinator.classic.state import GroupState
from coordinator.outcome import RequestContext
from protocol.errors import ErrorCode
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED
from protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)

__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "GROUP_AUTHORIZED_OPERATIONS", "describe_groups"]

_S = GroupState
_E = ErrorCode

# DescribeGroups authorized_operations when asked for: what Kafka 4.x reports for a group
# without an authorizer, every operation AclEntry.supportedOperations(GROUP) lists: READ (3),
# DELETE (6), DESCRIBE (8), DESCRIBE_CONFIGS (10) and ALTER_CONFIGS (11, group configs).
GROUP_AUTHORIZED_OPERATIONS = sum(1 << b for b in (3, 6, 8, 10, 11))


def describe_groups(
    groups: Mapping[str, Group],
    consumer_groups: Container[str],
    ctx: RequestContext,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse:
    """A group that does not exist is described as Dead, with no error at v0-5 and with
    GROUP_ID_NOT_FOUND from v6 (KIP-1043; Kafka 4.x's GroupMetadataManager.describeGroups).
    Member metadata, assignments and the protocol are given only for Stable groups."""
    operations = AUTHORIZED_OPERATIONS_OMITTED
    if ctx.api_version >= 3 and request.include_authorized_operations:
        operations = GROUP_AUTHORIZED_OPERATIONS
    described = []
    for group_id in request.groups:
        # A consumer group is "not a classic group" (GroupMetadataManager.describeGroups):
        # v0-5 describe it as Dead, as a group that does not exist.
        group = None if group_id in consumer_groups else groups.get(group_id)
        if group is None or group.state is _S.DEAD:
            missing = ctx.api_version >= 6
            described.append(
                DescribedGroup(
                    error_code=_E.GROUP_ID_NOT_FOUND if missing else _E.NONE,
                    error_message=f"Group {group_id} not found." if missing else None,
                    group_id=group_id,
                    group_state=str(_S.DEAD),
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=operations,
                )
            )
            continue
        protocol = group.protocol_name if group.state is _S.STABLE else None
        described.append(
            DescribedGroup(
                error_code=_E.NONE,
                group_id=group_id,
                group_state=str(group.state),
                protocol_type=group.protocol_type or "",
                protocol_data=protocol or "",
                members=[
                    DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=b"" if protocol is None else m.metadata(protocol),
                        member_assignment=b"" if protocol is None else m.assignment,
                    )
                    for m in group.members.values()
                ],
                authorized_operations=operations,
            )
        )
    return DescribeGroupsResponse(groups=described)
