"""The netui application: screens, keys, and the bridge from the engine to the screens.

Only the cluster screen (the first frame) is imported with the app; the other screens, the
pair and latency tests and the doctor are imported when first opened, so ``netui`` starts
without them (tests/integration/test_startup.py guards this).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.notifications import Notification, SeverityLevel
from textual.screen import Screen
from textual.widgets import Input

from netui.engine.newfiles import free_paths
from netui.ui.base import NetuiModalScreen, NetuiScreen
from netui.ui.cluster import ClusterScreen
from netui.ui.commands import NetuiCommands, showing as _showing
from netui.model.node import data_plane
from netui.ui.columns import GridOptions

if TYPE_CHECKING:
    from netui.engine.monitor import Monitor
    from netui.model.fleet import Fleet


def job_control() -> bool:
    """Whether a shell with job control can resume netui after SIGTSTP: netui's process
    group is one of its own, not its session's (as under a shell without job control, or
    when netui itself leads the session: ``exec netui``, ``ssh -t host netui``), and it is
    the terminal's foreground group."""
    try:
        pgrp = os.getpgrp()
        return pgrp != os.getsid(0) and os.tcgetpgrp(sys.__stdin__.fileno()) == pgrp
    except (OSError, AttributeError, ValueError):  # no terminal on stdin, or no stdin at all
        return False


class FleetUpdated(Message):
    """The engine finished a poll. A newer one replaces an unhandled older one."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FleetUpdated)

RECORD_TRIES = 5  # names tried when another netui records into the same directory in the same second


class NetuiApp(App):
    CSS_PATH = "netui.tcss"
    TITLE = "netui"
    COMMANDS = {NetuiCommands}  # the palette finds an action by any word of its name or description
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        # pairs on one key: live labels, check_action lets the one that applies through
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
        Binding("p", "play", "Play"),  # a replay's playback
        Binding("b", "bytes", "Bytes"),  # while showing bits/s
        Binding("b", "bits", "Bits"),
        Binding("a", "all_ifaces", "All ifaces"),
        Binding("a", "data_ifaces", "Data ifaces"),
        Binding("plus,equals_sign", "slower", "Slower", key_display="+", show=False),
        Binding("minus", "faster", "Faster", key_display="-", show=False),
        Binding("w", "record", "Record", show=False),
        Binding("w", "stop_recording", "Stop rec", show=False),
        Binding("ctrl+z", "suspend_process", "Suspend", show=False),  # back with fg, as any terminal program
        # as in less and k9s on every screen that scrolls (the grid has its own j/k/G; the
        # cluster screen's g groups by leaf)
        Binding("j", "scroll_lines(1)", "Down", show=False),
        Binding("k", "scroll_lines(-1)", "Up", show=False),
        Binding("g", "scroll_lines(-1e9)", "Top", show=False),
        Binding("G", "scroll_lines(1e9)", "End", show=False),
        # replay only (check_action hides them in live mode)
        Binding("x", "cycle_speed", "Speed"),
        Binding("n", "next_event", "Next event"),
        Binding("N", "next_event('straggler')", "Next straggler", show=False, key_display="N"),
        Binding("left", "seek(-10)", "−10 s", show=False, priority=True),
        Binding("right", "seek(10)", "+10 s", show=False, priority=True),
        Binding("shift+left", "seek(-60)", "−1 min", show=False, priority=True),
        Binding("shift+right", "seek(60)", "+1 min", show=False, priority=True),
    ]
    REPLAY_ACTIONS = frozenset({"cycle_speed", "next_event", "seek"})

    def __init__(self, monitor: Monitor, *, autostart: bool = True) -> None:
        super().__init__()
        self.monitor = monitor
        self.autostart = autostart
        self.paused = False
        self._frame: Fleet | None = None  # the fleet as it was when the display was paused
        self.show_all = False
        self.grid_options = GridOptions()
        # check name → what the check keeps between its runs (its last settings, offered again)
        self.check_settings: dict[str, Any] = {}
        self.last_tests: dict[str, dict] = {}  # kind → the document of the last test that finished here
        self.record_dir = Path.cwd()  # where w starts a recording
        self.recorded = None  # the Recorder still recording when netui quit: the CLI says where it went
        monitor.on_update = lambda: self.post_message(FleetUpdated())

    @property
    def replay(self) -> bool:
        """Fed by a recording (engine/replay.py) rather than live nodes: the monitor's mode says."""
        return self.monitor.mode.replay

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.REPLAY_ACTIONS:
            if not self.replay:
                return False
            if action == "seek" and self.focused is not None and isinstance(self.focused, Input):
                return False  # ←/→ move the cursor of the filter box
        if action in ("toggle_recording", "record", "stop_recording") and not self.monitor.mode.can_record:
            return False
        recorder = self.monitor.recorder
        live = {
            "pause": not self.display_paused, "resume": self.display_paused and not self.replay,
            "play": self.display_paused and self.replay,
            "bytes": not self.grid_options.as_bytes, "bits": self.grid_options.as_bytes,
            "all_ifaces": not self.show_all, "data_ifaces": self.show_all,
            "record": recorder is None, "stop_recording": recorder is not None,
        }
        return live.get(action, True)

    @property
    def fleet(self) -> Fleet:
        """The fleet the screens show: the monitor's, or while the display is paused the
        frame it was paused on, whatever is sorted, filtered or opened meanwhile."""
        return self._frame if self._frame is not None else self.monitor.fleet

    @property
    def display_paused(self) -> bool:
        """The display is paused (live), or the playback (a replay)."""
        if self.replay:
            return not self.monitor.playing
        return self.paused

    SEVERITY_RANK = {"information": 0, "warning": 1, "error": 2}

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """One toast at a time: a new one replaces those still showing that are not graver
        (marking five nodes shows one toast, not a stack of five over the Σ line)."""
        # here and now, not through a Notify message as Textual does: of keys pressed in a burst,
        # a toast still queued would escape its replacement and stack (netui notifies from its
        # own loop only, never from a thread)
        rank = self.SEVERITY_RANK.get(severity, 0)
        for shown in list(self._notifications):
            if self.SEVERITY_RANK.get(shown.severity, 0) <= rank:
                self._unnotify(shown, refresh=False)
        self._notifications.add(Notification(message, title, severity,
                                             self.NOTIFICATION_TIMEOUT if timeout is None else timeout,
                                             markup=markup))
        self._refresh_notifications()

    def on_mount(self) -> None:
        self.set_class(self.replay, "-replay")  # netui.tcss: toasts above the timeline
        self.push_screen(ClusterScreen())
        if self.replay:
            for note in self.monitor.recording.notes:  # a tail cut mid-write, say
                self.notify(note, severity="warning", timeout=8)
        if self.autostart:
            # after the screen's first refresh, when the footer has laid out its keys: the
            # first sample is quick, and the screen shows it whole rather than the footer later
            self.call_after_refresh(self._start_polling)

    def _start_polling(self) -> None:
        self.run_worker(self.monitor.run(), name="poller", group="poller", exclusive=True)

    async def on_unmount(self) -> None:
        recorder = self.monitor.stop_recording()  # finished here, so that its summary is whole
        if recorder is not None:
            self.recorded = recorder
        await self.monitor.close()

    def on_fleet_updated(self, message: FleetUpdated) -> None:
        if not self.paused:
            self.refresh_screen()

    def refresh_screen(self) -> None:
        screen = self.screen
        if not screen.is_mounted:
            return  # pushed but not composed yet: its on_mount shows the data
        if isinstance(screen, (NetuiScreen, NetuiModalScreen)):
            try:
                screen.refresh_data()
            except NoMatches:
                pass  # mounted, its children not yet: its on_mount shows the data

    def open_node(self, name: str) -> None:
        from netui.ui.node import NodeScreen

        self.push_screen(NodeScreen(name))

    def start_check(self, name: str, nodes: list[str], **options) -> None:
        """Run the check ``name`` (checks/__init__.py) over ``nodes``: its ``start`` asks for
        the settings and opens its screen (``options``: the check's own, a pair test's tool
        and matrix). In a replay, a recorded check shows its last test recorded instead."""
        from netui import checks

        check = checks.by_name(name)
        if self.replay and check.recorded:
            self.show_recorded_test(check.kind)
            return
        checks.load(check.start)(self, nodes, **options)

    def show_recorded_test(self, kind: str) -> None:
        """In a replay: the last test of ``kind`` recorded before the position, on its screen."""
        from netui import checks

        check = checks.by_kind(kind)
        what = check.title if check is not None else f"{kind} test"
        doc = self.monitor.last_test(kind)
        if doc is None or check is None:
            later = any(e.record.get("kind") == kind for e in self.monitor.events if e.record["type"] == "test")
            self.notify(f"no {what} recorded yet" + (" — n: next event" if later else ""),
                        severity="warning", timeout=3)
            return
        try:
            self.push_screen(checks.load(check.screen)(report=check.documents().load_report(doc)))
        except (ValueError, KeyError, TypeError) as exc:
            self.notify(f"the recorded {what} cannot be shown: {exc}", severity="error")

    def record_test(self, kind: str, document: dict) -> None:
        """A test finished: kept as the last of its kind (the doctor takes the latency test's
        RTTs), into the recording when one is running, and its suspects made stragglers when
        its check says so (``Monitor.test_done``)."""
        self.last_tests[kind] = document
        recorder = self.monitor.recorder
        if recorder is not None:
            recorder.test(kind, document)
        self.monitor.test_done(kind, document)  # the grid shows them from its next repaint

    def action_clear_pair_suspects(self) -> None:
        cleared = self.monitor.clear_pair_suspects()
        self.refresh_screen()
        self.notify(f"no longer suspects of a pair test: {', '.join(cleared)}" if cleared
                    else "no pair test suspects to clear", timeout=2)

    # actions -------------------------------------------------------------------------------
    def action_help(self) -> None:
        from netui.ui.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_pause(self) -> None:
        if self.replay:  # a replay pauses the playback itself
            self.monitor.toggle_playing()
        else:
            self.paused = not self.paused
            self._frame = self.monitor.fleet.frozen() if self.paused else None
        self.refresh_screen()
        self.refresh_bindings()

    action_pause = action_resume = action_play = action_toggle_pause

    def action_cycle_speed(self) -> None:
        self.monitor.cycle_speed()  # the timeline and the status bar say the speed
        self.refresh_screen()

    def action_seek(self, seconds: float) -> None:
        self.monitor.seek_by(seconds)  # the monitor tells the screen (FleetUpdated)

    def on_timeline_seek(self, message) -> None:
        """A click on the replay's timeline."""
        if self.replay:
            self.monitor.seek(message.t)

    def action_next_event(self, kind: str | None = None) -> None:
        """n: the next event of any kind; N: the next straggler flagged. The timeline names the
        event landed on (no toast: one per press would cover the timeline itself)."""
        if kind == "straggler":
            event = self.monitor.next_event(kinds=("straggler",), flagged=True)
        else:
            event = self.monitor.next_event()
        if event is None:
            self.notify(f"no {'straggler' if kind else 'event'} after this point", timeout=2)

    def action_scroll_lines(self, lines: float) -> None:
        from netui.ui.scrolling import scroll_box, scroll_by

        box = scroll_box(self.screen, self.focused)
        if box is not None:
            scroll_by(box, lines)

    def action_suspend_process(self) -> None:
        """Ctrl-Z: back to the shell, as a job ``fg`` resumes; only where there is a shell
        with job control to resume it (otherwise, e.g. ``ssh -t host netui`` or ``exec
        netui``, a stopped netui could never come back: it says so and goes on)."""
        if job_control():
            super().action_suspend_process()
        else:
            self.notify("Ctrl-Z: netui is not a job of an interactive shell here, so nothing could "
                        "bring it back; q quits", severity="warning")

    def action_toggle_recording(self) -> None:
        """w: start recording into a new file in the current directory, or stop."""
        if self.monitor.recorder is not None:
            recorder = self.monitor.stop_recording()
            self.notify(recorder.summary(), severity="warning" if recorder.error else "information", timeout=4)
        else:
            stem = time.strftime("netui-%Y%m%d-%H%M%S")
            for attempt in range(RECORD_TRIES):
                try:
                    path, = free_paths(self.record_dir, stem, (".ndjson.gz",))
                    self.monitor.start_recording(path)
                    break
                except FileExistsError as exc:
                    # another netui took the name between the look and the create: the next one
                    if attempt + 1 == RECORD_TRIES:
                        self.notify(f"cannot record: {exc}", severity="error")
                        return
                except OSError as exc:
                    self.notify(f"cannot record: {exc}", severity="error")
                    return
            self.notify(f"recording to {path} — w stops", timeout=3)
        self.refresh_screen()
        self.refresh_bindings()

    action_record = action_stop_recording = action_toggle_recording

    def action_toggle_bytes(self) -> None:
        self.grid_options = GridOptions(as_bytes=not self.grid_options.as_bytes)
        self.refresh_screen()
        self.refresh_bindings()

    action_bytes = action_bits = action_toggle_bytes

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all
        self.refresh_screen()
        self.refresh_bindings()
        hidden = sum(len(n.sample.interfaces) - len(data_plane(n.sample.interfaces))
                     for n in self.monitor.fleet if n.sample is not None)
        where = "" if _showing(self.screen, "netui.ui.node", "NodeScreen") else " on node screens"
        if self.show_all:
            self.notify(f"all interfaces{where}: {hidden} hidden ones (loopback, veth, bridges …) shown too; "
                        "the grid counts the data plane only — a hides them", timeout=3)
        else:
            self.notify(f"data-plane interfaces only{where}: {hidden} hidden — a shows them", timeout=3)

    action_all_ifaces = action_data_ifaces = action_toggle_all

    def action_slower(self) -> None:
        self.monitor.step_interval(+1)
        self.refresh_screen()

    def action_faster(self) -> None:
        self.monitor.step_interval(-1)
        self.refresh_screen()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from netui.ui.commands import netui_commands

        yield from super().get_system_commands(screen)
        yield from netui_commands(self, screen)


def make_app(monitor: Monitor, *, autostart: bool = True) -> NetuiApp:
    """The one app factory, for the CLI and the tests."""
    return NetuiApp(monitor, autostart=autostart)
