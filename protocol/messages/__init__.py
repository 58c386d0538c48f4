"""One module per Kafka API, named after it in snake_case (`join_group.py` for JoinGroup).

Each module declares the request and response dataclasses (covering every version we
support), its nested structs under Kafka's names, version notes in its docstring, and
`error_response(request, code, version)`, which builds what Kafka's getErrorResponse builds
for that version: the error code where that API keeps it.
"""
