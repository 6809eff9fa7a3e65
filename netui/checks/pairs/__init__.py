"""The pair bandwidth test: iperf3 or ib_write_bw between pairs of nodes, one pair or the
all-pairs matrix in rounds, and the verdict naming the nodes (or, with a topology, the
fabric) the failing pairs point to.

``parse_iperf3``/``parse_perftest`` read the tools' output; ``model`` schedules the rounds
and holds the results; ``verdict`` (``verdict_fabric`` with a topology) judges them;
``counters`` are what both ends' counters did meanwhile; ``tools`` builds the command lines;
``runner`` runs the test (``PairTest``); ``report`` is its JSON, CSV and text; ``screen`` the
matrix screen (shared with the latency test) and ``dialog`` the settings asked first.
"""

from netui.checks import Check

KIND = "pair-test"  # the kind of its JSON documents and recorded tests

CHECK = Check(
    name="pairs", title="pair test", kind=KIND, key="T", recorded=True, tool_title=True,
    verbs=("iperf3", "ib_write_bw"),
    start="netui.checks.pairs.dialog:start",
    screen="netui.checks.pairs.screen:MatrixScreen",
    runner="netui.checks.pairs.runner:PairTest",
    settings="netui.checks.pairs.tools:PairSettings",
    report="netui.checks.pairs.report",
    stragglers="netui.checks.pairs.verdict_stragglers:pair_stragglers",
)
