"""The route table: each row names the module of its API and the versions it serves; the
message module and the handler are imported on first use."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest

import protocol.messages
from broker import coordinator_guard, routes
from protocol.messages.api_versions import ApiVersionsRequest
from tests.reliability.process import run_python

KEYS = sorted(routes.ROUTES)


@pytest.mark.parametrize("api_key", KEYS)
def test_each_row_states_what_its_message_module_declares(api_key):
    module, versions = routes.ROUTES[api_key]
    messages = importlib.import_module(f"protocol.messages.{module}")
    name = routes.api_name(module)
    request = getattr(messages, f"{name}Request")
    response = getattr(messages, f"{name}Response")
    # What ApiVersions advertises (supported_versions) is what the decoder accepts.
    assert api_key == request.API_KEY
    assert request.VERSIONS == response.VERSIONS == versions
    assert callable(messages.error_response)
    route = routes.route_for(api_key)
    assert (route.api_key, route.name, route.versions) == (api_key, name, versions)
    assert (route.request, route.response) == (request, response)
    assert route.error_response is messages.error_response


def test_api_versions_advertises_every_row_and_only_them():
    advertised = {v.api_key: (v.min_version, v.max_version) for v in routes.supported_versions()}
    assert advertised == {k: (v.start, v.stop - 1) for k, (_, v) in routes.ROUTES.items()}
    # Every message module that declares a Request is routed: none is left out of the table.
    declared = {}
    for info in pkgutil.iter_modules(protocol.messages.__path__):
        messages = importlib.import_module(f"protocol.messages.{info.name}")
        request = getattr(messages, f"{routes.api_name(info.name)}Request", None)
        if request is not None:
            declared[request.API_KEY] = (request.VERSIONS.start, request.VERSIONS.stop - 1)
    assert declared == advertised


@pytest.mark.parametrize("api_key", KEYS)
def test_each_row_names_the_handler_module_of_its_api(api_key):
    module, _ = routes.ROUTES[api_key]
    handler = routes.load(api_key)
    assert callable(handler)
    assert f"broker.handlers.{module}" in sys.modules
    route = routes.route_for(api_key)
    assert route is not None
    assert route.handler is handler
    assert routes.load(api_key) is handler


def test_a_route_whose_module_disagrees_with_it_is_refused():
    route = routes.new_route(18, "api_versions", range(0, 3))
    with pytest.raises(RuntimeError, match=r"route 18 \(ApiVersions\) serves versions range"):
        route.request  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        route.nonesuch  # noqa: B018


def test_a_route_read_once_is_a_plain_route():
    # Its class has no __getattr__ then, so that the reads of the request path specialise.
    route = routes.new_route(3, "metadata", routes.ROUTES[3][1])
    assert type(route) is not routes.Route
    assert route.request.API_KEY == 3
    assert type(route) is routes.Route
    assert not hasattr(routes.Route, "__getattr__")
    assert route.response.API_KEY == 3
    assert callable(route.error_response)


def test_messages_and_handlers_are_imported_by_their_first_request_only(tmp_path):
    code = (
        "import sys, trio;"
        "loaded = lambda: {m for m in sys.modules if m.startswith(('broker.handlers.', "
        "'protocol.messages.'))};"
        "before = loaded(); import broker.routes as r; imported = loaded() - before;"
        "from broker.broker import Broker; from broker.config import load_config;"
        "from broker.context import RequestContext;"
        "from protocol.messages.api_versions import ApiVersionsRequest;"
        "broker = Broker(load_config(overrides={'log.dirs': sys.argv[1]}));"
        "route = r.route_for(18); handler = route.handler; before = loaded();"
        "ctx = RequestContext(broker, 3, 'c', '/127.0.0.1', 1, r);"
        "response = trio.run(handler, ctx, ApiVersionsRequest()).response;"
        "print(sorted(imported), sorted(loaded() - before),"
        " len(response.api_keys) == len(r.all_routes()), route.handler is not handler)"
    )
    assert run_python(code, str(tmp_path)) == (
        "['protocol.messages.api_versions'] ['broker.handlers.api_versions'] True True\n"
    )


async def test_a_handler_read_before_the_first_call_still_reaches_the_handler(tmp_path):
    # What the journal may hold: the handler as installed, its module not imported.
    from broker.broker import Broker
    from broker.config import load_config
    from broker.context import RequestContext

    broker = Broker(load_config(overrides={"log.dirs": str(tmp_path)}))
    ctx = RequestContext(broker, 3, "client", "/127.0.0.1", 1, routes)
    table = dict(routes._BY_KEY)
    try:
        routes.install(routes.ROUTES)
        route = routes.route_for(ApiVersionsRequest.API_KEY)
        stale = route.handler
        first = await stale(ctx, ApiVersionsRequest())
        # The route itself now holds the handler: a dispatch site that kept the route calls
        # it directly.
        loaded = route.handler
        assert loaded is not stale
        assert routes.route_for(ApiVersionsRequest.API_KEY) is route
        assert coordinator_guard.wrap(route, loaded) is loaded  # not a group API
        assert await stale(ctx, ApiVersionsRequest()) == first
        assert await loaded(ctx, ApiVersionsRequest()) == first
        # Kept encoded (broker.handlers.api_versions): the same answer each time.
        assert len(first.response.api_keys) == len(routes.ROUTES)
    finally:
        routes._BY_KEY.clear()
        routes._BY_KEY.update(table)


def test_group_apis_are_behind_the_coordinator_check():
    for api_key in KEYS:
        route = routes.route_for(api_key)
        guarded = route.name in coordinator_guard.KEYS or route.name in coordinator_guard.LISTINGS
        handler = routes.load(api_key)
        handle = importlib.import_module(f"broker.handlers.{route.module}").handle
        assert (handler is not handle) == guarded, route.name
        # A broker without others calls the handler itself (Broker.alone).
        assert route.alone is handle, route.name
    # Every name the guard knows is a route's.
    names = {r.name for r in routes.all_routes()}
    assert set(coordinator_guard.KEYS) | set(coordinator_guard.LISTINGS) <= names
    assert set(coordinator_guard.PER_KEY) <= set(coordinator_guard.KEYS)
