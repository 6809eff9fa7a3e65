#!/bin/sh
# Instructions per node-sample by step, under callgrind, for a harness that calls each step
# through a C function of its own (``operator.call``): tests/bench/mesh_instructions.py (the
# probe mesh), tests/bench/observe_instructions.py (decode, Node.observe, the tick) or
# tests/bench/peers_instructions.py (the "peers" field's decode and flow rates). The
# harness warms up uninstrumented, says so in GO.ready, and measures once GO exists; then its
# report. Run from the repository's root:
#   sh tests/bench/steps_instructions.sh mesh_instructions OUT.cg [its options]
#   sh tests/bench/steps_instructions.sh observe_instructions OUT.cg [its options]
set -e
harness=$1; out=$2; shift 2
case $harness in mesh_instructions|observe_instructions|peers_instructions) ;; *) echo "unknown harness: $harness" >&2; exit 2;; esac
py=${PYTHON:-.venv/bin/python}
go=$(mktemp -u "/tmp/$harness.XXXXXX")
valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --toggle-collect=_operator_call \
    --callgrind-out-file="$out" "$py" -m "tests.bench.$harness" --wait "$go" "$@" 2>"$out.log" &
pid=$!
while [ ! -e "$go.ready" ]; do sleep 1; kill -0 $pid 2>/dev/null || { cat "$out.log"; exit 1; }; done
callgrind_control -i on $pid >/dev/null
touch "$go"
wait $pid
rm -f "$go" "$go.ready"
"$py" -m "tests.bench.$harness" --report "$out" "$@"
