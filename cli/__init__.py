"""The `kmock` command line: `serve`, the admin commands, `produce`/`consume`, `dump-log`.

Owns argument parsing, output (tables, JSON, exit codes) and one module per command family.
May import `broker`, `pipeline`, `client` and everything below them; nothing imports `cli`.
"""
