#!/usr/bin/env bash
# Install what the test suite needs, then run all of it.
#   - Python: netui with its `test` extra (editable, from this checkout).
#   - As root: the Debian packages of the multi-node lab (OpenSSH server and client, iperf3,
#     perftest for ib_write_bw, iproute2, iputils-ping and fping for the latency tests, nftables
#     for their packet loss) and tmux. Without root, tests that need them skip
#     with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
DEBS=(openssh-server openssh-client iperf3 perftest iproute2 tmux iputils-ping fping nftables)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for p in "${DEBS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "tests/run.sh: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
fi

"$PY" -m pip install -q --disable-pip-version-check -e '.[test]'
exec "$PY" -m pytest -q -p no:cacheprovider "$@"
