"""protocol.kept: a cache holds at most its limit, emptied when a new key finds it full."""

from __future__ import annotations

from protocol.kept import keep


def test_a_full_cache_is_emptied_for_the_next_key() -> None:
    cache: dict[int, str] = {}
    for i in range(3):
        assert keep(cache, i, f"v{i}", 3) == f"v{i}"
    assert cache == {0: "v0", 1: "v1", 2: "v2"}
    assert keep(cache, 3, "v3", 3) == "v3"
    assert cache == {3: "v3"}


def test_a_cache_never_holds_more_than_its_limit() -> None:
    cache: dict[int, int] = {}
    for i in range(1000):
        keep(cache, i, i, 64)
        assert 1 <= len(cache) <= 64
        assert cache[i] == i
