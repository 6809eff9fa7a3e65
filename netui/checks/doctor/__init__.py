"""The doctor: a cluster's configuration checked node by node and across nodes — sysctls,
CPUs and IRQs, queues, RDMA ports, traffic shaping, offloads and rings.

``probe`` is the script each node runs and its parser (``parse_nic`` reads tc's and
ethtool's part); ``rules`` (with ``rules_nic`` and ``rules_sysctl``) turns the facts into
findings; ``runner`` probes the fleet and words the report; ``screen`` shows the findings.
The command (``netui doctor``) is the command line's.
"""

from netui.checks import Check

KIND = "doctor"  # the kind of its JSON document

CHECK = Check(
    name="doctor", title="doctor", kind=KIND, key="D",
    start="netui.checks.doctor.screen:start",
    screen="netui.checks.doctor.screen:DoctorScreen",
    report="netui.checks.doctor.report",
)
