"""The web console: static pages at GET / and /console/*, and the JSON API they use.

Served by the admin endpoint (broker.admin_http), so only when admin.port is set (127.0.0.1
unless admin.host says otherwise). `api` routes the console's /v1 paths (topics, messages,
groups, offsets reset, a group's timeline); `static/` holds the pages: plain HTML, CSS and
JavaScript, with no build step and nothing fetched from elsewhere.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["static_file"]

STATIC_DIR = Path(__file__).parent / "static"
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}


def static_file(path: str) -> tuple[str, bytes] | None:
    """(content type, bytes) of a console page for a request path, None if there is none.

    "/" and "/console/" are the page; "/console/<name>" a file of static/ by its exact name
    (no subdirectories, so no path can reach outside it).
    """
    if path in ("/", "/console", "/console/"):
        name = "index.html"
    elif path.startswith("/console/"):
        name = path[len("/console/") :]
    else:
        return None
    if "/" in name or name.startswith(".") or Path(name).suffix not in _TYPES:
        return None
    file = STATIC_DIR / name
    if not file.is_file():
        return None
    return _TYPES[file.suffix], file.read_bytes()
