"""What `netui` imports on its way to the first frame: nothing the first frame does not use.

Start-up time is mostly import time (tests/bench/bench_startup.py). These tests start the
real start-up path in a fresh interpreter — the argument parser, the monitor on this host,
the app up to the first sample shown — and check that the modules of the other screens, the
pair and latency tests, the doctor, recording and replay, SSH and HTTP sources, and plotext
were not imported. Not timed: a module that sneaks back onto the start path fails here
however fast the machine is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# imported only when their screen, command or source is used
LAZY = (
    "asyncssh", "aiohttp", "plotext", "textual_plotext", "numpy", "tomllib",
    "netui.collectors.ssh", "netui.collectors.ssh_connect", "netui.collectors.ssh_stream",
    "netui.collectors.sampler", "netui.collectors.frames",
    "netui.collectors.node_exporter", "netui.collectors.prometheus", "netui.cli.bench",
    "netui.cli.doctor", "netui.cli.export",
    "netui.inventory", "netui.ui.node", "netui.ui.panels", "netui.ui.ports", "netui.checks.pairs.screen",
    "netui.checks.latency.screen", "netui.checks.doctor.screen", "netui.checks.pairs.dialog",
    "netui.checks.latency.dialog", "netui.ui.help",
    "netui.checks.pairs.runner", "netui.checks.pairs.tools", "netui.checks.latency.runner",
    "netui.checks.latency.tools", "netui.checks.doctor.runner", "netui.checks.doctor.report",
    "netui.collectors.shell", "netui.engine.recording",
    "netui.engine.recorder", "netui.engine.replay", "netui.engine.export", "netui.engine.document",
    "netui.checks.pairs.model_addresses", "netui.checks.pairs.model", "netui.checks.latency.model", "netui.checks.doctor.rules",
)

FIRST_FRAME = """
import json, sys
from netui.cli.settings import WatchSettings
from netui.cli.watch import build_monitor, build_parser
from netui.engine import eventloop
from netui.ui.app import make_app

args = build_parser(None).parse_args([])
app = make_app(build_monitor(WatchSettings.from_options(args), history_s=60))

async def first_frame():
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):  # the first sample, shown (at most 10 s)
            await pilot.pause(0.05)
            if all(n.samples_seen >= 1 for n in app.monitor.fleet):
                break
        await pilot.pause()
        shown = " up " in app.screen.query_one("#status").render().plain + " "
    return shown

up = eventloop.run(first_frame())  # the loop `netui` runs on
print(json.dumps({"up": up, "modules": sorted(sys.modules)}))
"""


def modules_after(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_first_frame_imports_no_other_screen_test_or_transport():
    result = modules_after(FIRST_FRAME)
    modules = set(result["modules"])
    assert "netui.ui.cluster" in modules and "textual" in modules  # the path really ran
    assert result["up"], "the first sample was not shown"
    assert sorted(modules & set(LAZY)) == []


@pytest.mark.slow
def test_help_imports_only_the_parser_and_snapshot_no_textual():
    code = ("import json, sys, contextlib, io\n"
            "from netui.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    try:\n"
            "        main(sys.argv[1:])\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(json.dumps({'out': out.getvalue(), 'modules': sorted(sys.modules)}))\n")
    helped = modules_after(code, "--help")
    assert "usage: netui" in helped["out"]
    assert not {m for m in helped["modules"] if m.split(".")[0] in ("textual", "rich", "psutil", "pyroute2", "asyncio")}
    assert [m for m in helped["modules"] if m.startswith("netui")] == ["netui", "netui.cli", "netui.cli.options", "netui.cli.watch",
                                                                       "netui.exits", "netui.readlimits"]  # argparse only

    snap = modules_after(code, "snapshot", "--json", "--interval", "0.1")
    assert json.loads(snap["out"])["nodes"][0]["state"] == "up"
    assert not {m for m in snap["modules"] if m.split(".")[0] in ("textual", "rich", "plotext", "asyncssh")}
