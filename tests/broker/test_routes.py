"""The route table: each row names a handler module that exists, imported on first use."""

from __future__ import annotations

import pytest

from broker import coordinator_guard, routes
from protocol.messages.api_versions import ApiVersionsRequest
from tests.reliability.process import run_python


@pytest.mark.parametrize("request_cls", list(routes.ROUTES), ids=lambda c: c.__name__)
def test_each_row_names_the_handler_module_of_its_api(request_cls):
    module = routes.ROUTES[request_cls]
    # Same stem as the message module (STYLE: protocol/messages and broker/handlers match).
    assert request_cls.__module__ == f"protocol.messages.{module}"
    handler = routes.load(request_cls, module)
    assert callable(handler)
    route = routes.route_for(request_cls.API_KEY)
    assert route is not None
    assert route.handler is handler
    assert route.request is request_cls


def test_handlers_are_imported_by_their_first_request_only(tmp_path):
    code = (
        "import sys, trio, broker.routes as r;"
        "from broker.broker import Broker; from broker.config import load_config;"
        "from broker.context import RequestContext;"
        "from protocol.messages.api_versions import ApiVersionsRequest;"
        "before = sorted(m for m in sys.modules if m.startswith('broker.handlers.'));"
        "broker = Broker(load_config(overrides={'log.dirs': sys.argv[1]}));"
        "route = r.route_for(18);"
        "ctx = RequestContext(broker, 3, 'c', '/127.0.0.1', 1, r);"
        "response = trio.run(route.handler, ctx, ApiVersionsRequest()).response;"
        "after = sorted(m for m in sys.modules if m.startswith('broker.handlers.'));"
        "print(before, after, len(response.api_keys) == len(r.all_routes()),"
        " r.route_for(18).handler is not route.handler)"
    )
    assert run_python(code, str(tmp_path)) == "[] ['broker.handlers.api_versions'] True True\n"


async def test_a_route_read_before_the_first_call_still_reaches_the_handler(tmp_path):
    # What ctx.routes and the journal may hold: the Route as installed, handler not imported.
    from broker.broker import Broker
    from broker.config import load_config
    from broker.context import RequestContext

    broker = Broker(load_config(overrides={"log.dirs": str(tmp_path)}))
    ctx = RequestContext(broker, 3, "client", "/127.0.0.1", 1, routes)
    table = dict(routes._BY_KEY)
    try:
        routes.install(routes.ROUTES)
        stale = routes.route_for(ApiVersionsRequest.API_KEY)
        first = await stale.handler(ctx, ApiVersionsRequest())
        loaded = routes.route_for(ApiVersionsRequest.API_KEY).handler
        assert loaded is not stale.handler
        assert coordinator_guard.wrap(ApiVersionsRequest, loaded) is loaded  # not a group API
        assert await stale.handler(ctx, ApiVersionsRequest()) == first
        assert await loaded(ctx, ApiVersionsRequest()) == first
        # Kept encoded (broker.handlers.api_versions): the same answer each time.
        assert len(first.response.api_keys) == len(routes.ROUTES)
    finally:
        routes._BY_KEY.clear()
        routes._BY_KEY.update(table)
