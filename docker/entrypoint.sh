#!/bin/sh
# Container entry point: container defaults for a few settings, then `exec kmock serve`.
#
# Defaults (each only when the variable is unset; an empty value is kept as given):
#   KAFKA_LISTENERS             PLAINTEXT://0.0.0.0:9092   (every interface, not loopback)
#   KAFKA_LOG_DIRS              /var/lib/kmock             (the image's volume)
#   KAFKA_ADMIN_PORT            8080                       (health checks, /metrics)
#   KAFKA_ADMIN_HOST            0.0.0.0
#   KAFKA_ADVERTISED_LISTENERS  NAME://localhost:<port> for each listener NAME://host:<port>
#                               what clients are told to connect to after bootstrapping.
#                               The default suits `docker run -p 9092:9092` and clients on
#                               the host. Clients in other containers need the name they
#                               reach this one by: give the broker two listeners, one per
#                               network, each advertising its own address (a client is told
#                               the address of the listener it connected through), as
#                               docker-compose.yml does:
#                                 KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092
#                                 KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT
#                                 KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kmock:29092,PLAINTEXT_HOST://127.0.0.1:9092
# Every other KAFKA_* variable is read by kmock itself, named as apache/kafka's image names
# them (broker/config.py: KAFKA_LOG_DIRS -> log.dirs, `__` for `_`, `___` for `-`);
# KAFKA_CREATE_TOPICS=orders:3,events:1:1:cleanup.policy=compact creates topics at start.
# Arguments go to `kmock serve` (flags, or a properties file); an admin command
# (`topics list ...`) runs that instead of the broker.
set -eu

case "${1:-}" in
    topics|groups|offsets|produce|consume|dump-log|report|--help|-h|--version)
        exec kmock "$@" ;;
    serve)
        shift ;;
esac

: "${KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092}"
: "${KAFKA_LOG_DIRS=/var/lib/kmock}"
: "${KAFKA_ADMIN_PORT=8080}"
: "${KAFKA_ADMIN_HOST=0.0.0.0}"
if [ -z "${KAFKA_ADVERTISED_LISTENERS+set}" ]; then
    # NAME://host:port,... -> NAME://localhost:port,... (the ports as published with -p)
    KAFKA_ADVERTISED_LISTENERS="$(printf '%s\n' "$KAFKA_LISTENERS" | tr ',' '\n' \
        | sed -n 's|^ *\([^:]*\)://.*:\([0-9]*\) *$|\1://localhost:\2|p' | paste -sd, -)"
fi
export KAFKA_LISTENERS KAFKA_LOG_DIRS KAFKA_ADMIN_PORT KAFKA_ADMIN_HOST KAFKA_ADVERTISED_LISTENERS

exec kmock serve "$@"
