#!/usr/bin/env bash
# Installs the non-Python tools the integration and pipeline tests use, from Debian's
# packages, skipping whatever is already there:
#
#   kcat                               librdkafka's CLI client (integration tests)
#   openjdk-17-jre-headless            only if no java >= 17 is on PATH (Spark 4 needs 17/21)
#   golang-go                          builds tests/integration/sarama (GOPATH mode, offline)
#   golang-github-shopify-sarama-dev   sarama 1.22.1 and its dependencies as Go source
#   nodejs, npm                        only if missing; kafkajs runs on them
#   chromium                           the browser playwright-core drives in the web console's
#                                      acceptance test (tests/integration/test_console.py)
#
# Runs apt-get update once, and only when something needs installing. Uses sudo only when
# not root. On a machine without apt-get it prints what is missing and exits 0, so that the
# rest of the suite can still run.
set -euo pipefail

SARAMA_SRC=/usr/share/gocode/src/github.com/Shopify/sarama

have() { command -v "$1" >/dev/null 2>&1; }

java_major() {
    # `java -version` prints e.g. 'openjdk version "17.0.15" 2025-04-15' on stderr.
    java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -n1
}

missing=()
have kcat || missing+=(kcat)
java_version=0
have java && java_version=$(java_major)
if [ -z "$java_version" ] || [ "$java_version" -lt 17 ]; then
    missing+=(java17)
fi
have go || missing+=(golang-go)
[ -f "$SARAMA_SRC/sarama.go" ] || missing+=(golang-github-shopify-sarama-dev)
have node || missing+=(nodejs)
have npm || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)

if [ ${#missing[@]} -eq 0 ]; then
    echo "system deps: all present (kcat, java >= 17, go, sarama source, node, npm, chromium)"
    exit 0
fi

if ! have apt-get; then
    echo "system deps: no apt-get here; install these yourself: ${missing[*]}" >&2
    echo "system deps: tests that need them will fail or be skipped" >&2
    exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if have sudo; then
        SUDO=(sudo)
    else
        echo "system deps: not root and no sudo; install these yourself: ${missing[*]}" >&2
        exit 0
    fi
fi

packages=()
for name in "${missing[@]}"; do
    if [ "$name" = java17 ]; then
        packages+=(openjdk-17-jre-headless)
    else
        packages+=("$name")
    fi
done

echo "system deps: installing ${packages[*]}"
"${SUDO[@]}" apt-get update -qq
# openjdk-17 is bookworm's default JRE; a newer Debian may only have 21, which Spark 4
# also supports.
if [[ " ${packages[*]} " == *" openjdk-17-jre-headless "* ]] \
    && ! apt-cache show openjdk-17-jre-headless >/dev/null 2>&1; then
    packages=("${packages[@]/openjdk-17-jre-headless/default-jre-headless}")
fi
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}"
