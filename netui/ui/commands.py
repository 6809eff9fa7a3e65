"""The command palette's source (ctrl+p): netui's actions found by any word of their name or
of their description — "straggler", "suspect", "jump", "record", "matrix" — not only by the
letters of their title, as Textual's own source does.

A title that the query fuzzily matches ranks first (Textual's matcher); then the actions
whose name or description holds every word of the query as the start of one of its words.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.screen import Screen

from netui import checks
from netui.ui.cluster import ClusterScreen
from netui.ui.keys import check_rows

WORD_SCORE = 0.2  # below most fuzzy title matches: what the user spelled out comes first

_WORD = re.compile(r"[\w']+")


def words_match(query: str, text: str) -> bool:
    """Every word of ``query`` begins a word of ``text`` (case-insensitive)."""
    wanted = _WORD.findall(query.lower())
    have = _WORD.findall(text.lower())
    return bool(wanted) and all(any(w.startswith(q) for w in have) for q in wanted)


class NetuiCommands(Provider):
    async def discover(self) -> Hits:
        for title, help_text, callback, discover in sorted(self.app.get_system_commands(self.screen),
                                                            key=lambda c: c[0]):
            if discover:
                yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback, *_ in self.app.get_system_commands(self.screen):
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
            elif words_match(query, f"{title} {help_text}"):
                yield Hit(WORD_SCORE, Content(title), callback, help=help_text)


def showing(screen: Screen, module: str, name: str) -> bool:
    """``screen`` is an instance of ``module.name`` — False without importing it: a screen
    whose module was never imported cannot be on the stack."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(screen, getattr(loaded, name))


def netui_commands(app, screen: Screen) -> Iterator[SystemCommand]:
    """netui's actions for ``screen``, each with the words a user may look for in its
    description; an action that has nothing to act on now says so when run."""
    yield SystemCommand("Pause / resume", "Freeze the display; sampling goes on (p)", app.action_toggle_pause)
    if app.replay:
        yield SystemCommand("Replay speed", "1×, 10×, 60× (x)", app.action_cycle_speed)
        yield SystemCommand("Next event", "Jump to the next event: a state change, health level, straggler "
                                          "or recorded test (n)", app.action_next_event)
        yield SystemCommand("Next straggler", "Jump to the next straggler flagged: a slow node, a pair test's "
                                              "suspect (N)", lambda: app.action_next_event("straggler"))
        yield SystemCommand("Back 10 s", "Jump back in the recording (←; shift: 1 min)", lambda: app.action_seek(-10))
        yield SystemCommand("Forward 10 s", "Jump forward in the recording (→; shift: 1 min)",
                            lambda: app.action_seek(10))
        yield SystemCommand("Recorded pair test", "The last pair test (matrix) recorded before this point (T)",
                            lambda: app.show_recorded_test(checks.by_name("pairs").kind))
        yield SystemCommand("Recorded latency test", "The last latency matrix recorded before this point (l)",
                            lambda: app.show_recorded_test(checks.by_name("latency").kind))
    else:
        recorder = app.monitor.recorder
        if recorder is None:
            yield SystemCommand("Record / stop", "Record samples, states and events to a file (w)",
                                app.action_toggle_recording)
        else:
            from netui.ui.status import recording_words

            yield SystemCommand("Record / stop", f"Stop {recording_words(recorder)} (w)", app.action_toggle_recording)
        suspects = app.monitor.fleet.pair_suspects
        yield SystemCommand("Clear pair-test suspects",
                            ("The nodes the last pair tests named are stragglers no more: " + ", ".join(suspects))
                            if suspects else "No pair test names a suspect now (a pair test's suspects show as "
                                             "stragglers until cleared)", app.action_clear_pair_suspects)
    yield SystemCommand("Bits / bytes", "Show throughput in bits/s or bytes/s (b)", app.action_toggle_bytes)
    yield SystemCommand("All interfaces", "Show loopback and virtual interfaces too (a)", app.action_toggle_all)
    yield SystemCommand("Longer interval", "Sample less often (+)", app.action_slower)
    yield SystemCommand("Shorter interval", "Sample more often (-)", app.action_faster)
    yield SystemCommand("Netui keys", "Every key netui knows (?)", app.action_help)
    if isinstance(screen, ClusterScreen):
        grid = screen.grid
        yield SystemCommand("Open node", "The node under the cursor: why it is flagged (straggler, suspect, "
                                         "health), its interfaces, TCP, CPUs (Enter)", screen.action_open_node)
        yield SystemCommand("First row", "Jump the cursor to the top row: the worst node, the straggler (Home)",
                            grid.action_first)
        yield SystemCommand("Last row", "Jump the cursor to the bottom row (End, G)", grid.action_last)
        yield SystemCommand("Sort", "Cycle the grid's sort order: worst first (stragglers, suspects), node, "
                                    "RX, TX, drops … (s)", screen.action_cycle_sort)
        yield SystemCommand("Filter", "Filter nodes by name or state (/)", screen.action_filter)
        yield SystemCommand("Mark node", "Mark or unmark the node under the cursor for a pair test (space)",
                            grid.action_toggle_mark)
        yield SystemCommand("iperf3 pair test", "Between the two marked nodes (t)",
                            lambda: screen.action_pair_test("iperf3"))
        yield SystemCommand("iperf3 matrix", "All pairs of the marked nodes, or of all: names the suspect (T)",
                            lambda: screen.action_pair_matrix("iperf3"))
        yield SystemCommand("ib_write_bw pair test", "RDMA between the two marked nodes (r)",
                            lambda: screen.action_pair_test("ib_write_bw"))
        yield SystemCommand("ib_write_bw matrix", "RDMA, all pairs of the marked nodes, or of all (R)",
                            lambda: screen.action_pair_matrix("ib_write_bw"))
        yield SystemCommand("Latency matrix", "RTT and loss (fping or ping) between the marked nodes, "
                                              "or all (l)", lambda: screen.action_run_check("latency"))
        yield SystemCommand("Peer matrix", "The TCP flows between watched nodes: throughput, RTT, "
                                           "retransmits (P)", screen.action_peers)
        yield SystemCommand("Probe mesh", "Packet loss and RTT between every two nodes, from the probe mesh "
                                          "(on by default over SSH up to 1,024 nodes; --mesh off|on): heatmap, "
                                          "lossy link suspects, worst pairs (m)",
                            screen.action_mesh)
        yield SystemCommand("Doctor", "Check MTU, link speeds, RDMA ports, sysctls… of the marked nodes, "
                                      "or of all (D)", lambda: screen.action_run_check("doctor"))
        for row in check_rows():  # the registered checks netui's key table does not bind by hand
            check = checks.by_name(row.check)
            what = check.description or check.title
            yield SystemCommand(check.label, f"{what[:1].upper()}{what[1:]}: the marked nodes, or all ({check.key})",
                                lambda name=check.name: screen.action_run_check(name))
    if showing(screen, "netui.checks.doctor.screen", "DoctorScreen"):
        yield SystemCommand("Doctor again", "Run the checks again, after a fix (r)", screen.action_rerun)
    if showing(screen, "netui.checks.latency.screen", "LatencyScreen"):
        yield SystemCommand("Export latency test", "Write the results as CSV and JSON (e)", screen.action_export)
        yield SystemCommand("Cancel latency test / back", "Stop every ping, or leave the matrix (Esc)",
                            screen.action_back)
    elif showing(screen, "netui.checks.pairs.screen", "MatrixScreen"):
        yield SystemCommand("Export pair test", "Write the results as CSV and JSON (e)", screen.action_export)
        yield SystemCommand("Cancel pair test / back", "Stop every test, or leave the matrix (Esc)",
                            screen.action_back)
