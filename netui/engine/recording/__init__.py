"""Recordings: the file format, its codec, its writer, its hardened reader, and the
recording as frames.

A recording stores raw samples (counters), never rates, so replay runs the same code as
live mode. It is JSON lines, one record per line, each with its type and the monitor's wall
time ``t`` (seconds since the epoch)::

    {"type": "header", "format": 2, "netui": "0.1.0", "hosts": [...], "interval_s": 1.0, "t": ...}
    {"type": "sample", "t": ..., "node": "gpu01", "sample": {...}}      # raw counters
    {"type": "state", "t": ..., "node": "gpu03", "state": "down", "reason": "..."}
    {"type": "health", "t": ..., "node": "gpu02", "level": "warning", "was": "ok", "reasons": [...]}
    {"type": "straggler", "t": ..., "node": "gpu07", "flagged": true, "metric": "tx", "reason": "..."}
    {"type": "test", "t": ..., "kind": "pair-test" | "latency-test", "report": {...}}
    {"type": "tick", "t": ...}                                           # the end of one tick
    {"type": "tick", "t": ..., "interval_s": 5.0}     # ... in which the interval changed: 5 s from here on

The lines go through one gzip stream that is flushed with ``Z_SYNC_FLUSH`` at the end of
every tick: ``zcat`` reads the file, compression spans records (the samples of one node
look alike from one tick to the next), and a writer killed mid-write (SIGKILL, a full disk)
leaves a file whose every byte up to the last flush decompresses — the reader drops the
incomplete tail. An interval change rides on a tick mark (a field that a reader of format 2
which does not know it ignores), so a recording with one is still format 2; a file started
by rotation has the interval of its time in its header. Version 1 recordings — plain JSON
lines of ``{"node", "sample"}`` — still load.

- ``codec.py``: records as JSON and back (``sample_to_dict``/``sample_from_dict`` are the
  one place a sample becomes JSON and back), what a reader takes of a line and a record.
- ``writer.py``: ``RecordingWriter``, one gzip stream flushed per tick, rotation.
- ``reader.py``: reading that trusts nothing (regular files, read limits, damaged tails
  kept up to their last complete tick, with a note).
- ``playback.py``: the one loader (``load``: the recording as frames) and the one way to run
  the model over it (``replay_frames``).
"""
