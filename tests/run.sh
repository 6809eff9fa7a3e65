#!/usr/bin/env bash
# Install what the test suite needs, then run all of it.
#   - Python: a virtual environment of its own (.venv/ in this checkout, made once with
#     $PYTHON or python3), holding netui with its `test` extra (editable, from this checkout):
#     never whatever python3 comes first on PATH, nor a system Python's packages.
#   - As root: a C compiler for netui._speedups (tests compare it with its Python twins), the
#     Debian packages of the multi-node lab (OpenSSH server and client, iperf3,
#     perftest for ib_write_bw, iproute2, iputils-ping and fping for the latency tests, nftables
#     for their packet loss, ethtool for the doctor's offloads and rings, lldpd for the two-tier
#     lab's switches and nodes), node_exporter and Prometheus for the other sources, and tmux.
#     Without root, tests that need them skip with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
DEBS=(python3-venv gcc libc6-dev openssh-server openssh-client iperf3 perftest iproute2 tmux iputils-ping fping nftables
      ethtool prometheus-node-exporter prometheus lldpd)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for p in "${DEBS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "tests/run.sh: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        # prometheus, prometheus-node-exporter and lldpd ship init scripts: their postinst must not
        # start daemons (the tests start their own); a policy-rc.d that says no, for this install
        made_policy=
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
            made_policy=1
            trap 'rm -f /usr/sbin/policy-rc.d' EXIT
        fi
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        if [ -n "$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
    fi
fi

VENV=${NETUI_TEST_VENV:-$PWD/.venv}
if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PY" -m venv "$VENV"; then
        echo "tests/run.sh: '$PY -m venv' failed; on Debian or Ubuntu install python3-venv" >&2
        exit 2
    fi
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]'
# the suite starts `netui` and the venv's python by name too (tmux tests, subprocesses)
export PATH="$VENV/bin:$PATH"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
