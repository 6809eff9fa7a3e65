"""netui: a terminal cockpit for the network of a distributed-training cluster."""

import warnings

__version__ = "0.1.0"

# asyncssh still names the DSA key types that cryptography deprecates (51.0 here): importing it warns on
# stderr, which a user of netui can do nothing about (netui never offers DSA keys itself). Only
# that warning, raised from asyncssh's own modules, is silenced; every other one is shown.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh(\.|$)")
