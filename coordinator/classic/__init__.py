"""The classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup): Kafka's ClassicGroup.

    state.py       ClassicGroupState and its transition table, with the theory of operation
    group.py       Group and Member, the plain data and the rules that need no request
    membership.py  join, sync, heartbeat, leave, rebalance and static members (the classic part
                   of Kafka's GroupMetadataManager)

A KIP-848 "consumer" group type would sit beside this package (Kafka's modern/consumer/),
sharing the facade, the offsets manager and the Outcome/records layer.
"""
