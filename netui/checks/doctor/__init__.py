"""The doctor: a cluster's configuration checked node by node and across nodes — sysctls,
CPUs and IRQs, queues, RDMA ports, traffic shaping, offloads and rings.

``probe`` is the script each node runs and its parser (``parse_nic`` reads tc's and
ethtool's part); ``rules`` (with ``rules_nic`` and ``rules_sysctl``) turns the facts into
findings; ``runner`` probes the fleet and words the report; ``screen`` shows the findings.
The command (``netui doctor``) is the command line's.
"""
