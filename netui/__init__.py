"""netui: a terminal cockpit for the network of a distributed-training cluster."""

__version__ = "0.1.0"
