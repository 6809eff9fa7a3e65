"""The checks a user runs on demand, one folder per feature: the pair bandwidth test
(``pairs/``), the latency test (``latency/``) and the doctor (``doctor/``).

A feature folder holds the feature's modules of every layer; the first word of a module's
name says its layer, and the layers still point one way (collectors → model → engine → ui,
tests/unit/test_layers.py):

- ``parse_*``, ``probe``: collectors — a tool's output or a probe script's, parsed; pure
  functions of text.
- ``model``, ``verdict*``, ``counters``, ``rules*``: model — pure, no I/O, no clock.
- ``tools``, ``runner``, ``report``: engine — the tools' command lines, the run over the
  monitor's connections, the report as JSON, CSV and text.
- ``screen``, ``dialog``: ui — the feature's screen and its settings dialog.

The latency test builds on the pair test (its rounds, its report's helpers, the matrix
screen); the doctor reads a latency test's report for the buffer advice.
"""
