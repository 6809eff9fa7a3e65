"""The latency test: RTT and loss between nodes with ping or fping, one pair or the
all-pairs matrix, and the verdict naming a suspect node.

``parse_ping`` reads ping's and fping's output; ``model`` holds the results and judges them;
``tools`` builds the senders' command lines (``LatencySettings``); ``runner`` runs the test
(``LatencyTest``); ``report`` is its JSON, CSV and text; ``screen`` the matrix screen in its
latency mode.
"""
