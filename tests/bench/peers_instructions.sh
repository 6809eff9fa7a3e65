#!/bin/sh
# The "peers" field's decoding and flow rates: instructions per node-sample (tests/bench/peers_instructions.py):
# the warm seconds uninstrumented, the measured ones under callgrind. Run from the repository's root.
set -e
out=$1; shift
py=${PYTHON:-.venv/bin/python}
go=$(mktemp -u /tmp/peers-instructions.XXXXXX)
valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --toggle-collect=_operator_call \
    --callgrind-out-file="$out" "$py" -m tests.bench.peers_instructions --wait "$go" "$@" 2>"$out.log" &
pid=$!
while [ ! -e "$go.ready" ]; do sleep 1; kill -0 $pid 2>/dev/null || { cat "$out.log"; exit 1; }; done
callgrind_control -i on $pid >/dev/null
touch "$go"
wait $pid
rm -f "$go" "$go.ready"
"$py" -m tests.bench.peers_instructions --report "$out" "$@"
