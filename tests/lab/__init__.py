"""The multi-node lab: a cluster of network namespaces with real OpenSSH servers.

Used by the integration tests (fixture `lab` from tests.lab.pytest_plugin) and by hand:

    python -m tests.lab up 4      # stays up; prints the ssh_config to use
    python -m tests.lab status
    python -m tests.lab down
    python -m tests.lab up --leaves 2 --nodes-per-leaf 4 --shape-uplink leaf1=200mbit

Needs root, iproute2, OpenSSH (sshd and client) and pyroute2; lldpd for the two-tier lab's LLDP. Addresses come only
from 198.18.0.0/24.
"""

from .cluster import Lab, remove_lab
from .network import BRIDGE_ADDRESS, SUBNET
from .node import LabError, LabNode
from .switch import LabSwitch

__all__ = ["BRIDGE_ADDRESS", "SUBNET", "Lab", "LabError", "LabNode", "LabSwitch", "remove_lab"]
