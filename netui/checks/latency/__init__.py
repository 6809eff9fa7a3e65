"""The latency test: RTT and loss between nodes with ping or fping, one pair or the
all-pairs matrix, and the verdict naming a suspect node.

``parse_ping`` reads ping's and fping's output; ``model`` holds the results and judges them;
``tools`` builds the senders' command lines (``LatencySettings``); ``runner`` runs the test
(``LatencyTest``); ``report`` is its JSON, CSV and text; ``screen`` the matrix screen in its
latency mode.
"""

from netui.checks import Check

KIND = "latency-test"  # the kind of its JSON documents and recorded tests

CHECK = Check(
    name="latency", title="latency test", kind=KIND, key="l", min_nodes=2, recorded=True,
    verbs=("latency",), aliases=("ping",),  # `netui bench ping`, its first name, still runs it
    start="netui.checks.latency.dialog:start",
    screen="netui.checks.latency.screen:LatencyScreen",
    runner="netui.checks.latency.runner:LatencyTest",
    settings="netui.checks.latency.tools:LatencySettings",
    report="netui.checks.latency.report",
)
