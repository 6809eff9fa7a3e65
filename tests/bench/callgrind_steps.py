"""What the step harnesses (tests/bench/mesh_instructions.py, observe_instructions.py,
peers_instructions.py; run by steps_instructions.sh) read back from callgrind: each step's
inclusive instructions, found by the C function it was called through, and the calls made to
the allocator."""

from __future__ import annotations

import re
import subprocess

ALLOC = ("_PyObject_Malloc", "_PyObject_Calloc")  # (every object, and PyMem_Malloc, goes through these)


def step_instructions(path: str, steps: dict[str, str]) -> dict[str, int]:
    """Each step's inclusive instructions in callgrind file ``path`` (``steps``: step → the C
    function it was called through; 0 for one not found)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0].replace(",", "").isdigit():
            for step, symbol in steps.items():
                if re.search(rf":{symbol}( |$)", line):
                    found.setdefault(step, int(parts[0].replace(",", "")))
    return {step: found.get(step, 0) for step in steps}


def report(path: str, node_samples: int, steps: dict[str, str], *, allocations: bool = False,
           digits: int = 1) -> None:
    """Print each step's instructions per node-sample and their sum (a step named in brackets,
    "(of which …)", is part of another: left out of the sum); ``allocations``: the allocator's
    calls per node-sample too."""
    width = max(len(s) for s in [*steps, "allocated"])
    total = 0.0
    for step, count in step_instructions(path, steps).items():
        n = count / node_samples
        total += n if not step.startswith("(") else 0
        print(f"  {step:>{width}}: {n / 1e3:7.{digits}f} k instructions per node-sample")
    print(f"  {'all':>{width}}: {total / 1e3:7.{digits}f} k")
    if allocations:
        print(f"  {'allocated':>{width}}: {calls(path, ALLOC) / node_samples:7.1f} blocks per node-sample "
              "(made, freed or not)")


def calls(path: str, functions: tuple[str, ...]) -> int:
    """Calls to ``functions`` counted in a callgrind file (its ``calls=`` lines)."""
    names: dict[str, str] = {}  # compressed id → name
    wanted = False
    total = 0
    ref = re.compile(r"^c?fn=\((\d+)\)(?: (.*))?$")
    with open(path) as f:
        for line in f:
            if line.startswith("cfn="):
                m = ref.match(line.strip())
                if m:
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    wanted = names.get(m.group(1)) in functions
                else:
                    wanted = line[4:].strip() in functions
            elif line.startswith("fn="):
                m = ref.match(line.strip())
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                wanted = False
            elif line.startswith("calls=") and wanted:
                total += int(line[6:].split()[0])
                wanted = False
    return total
