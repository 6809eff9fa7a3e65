"""Strings a hostile node, file or server sends to take over the user's terminal, and the
check that none of it reached what netui printed or painted (tests/integration/
test_hostile_text.py, tests/ui/test_hostile_text_ui.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.testdata import PROCFS, data_path

CONTROLS = "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xA0)))  # C0, DEL, C1
SEQUENCES = (
    "\x1b]52;c;SEFDS0VEIEJZIE5PREU=\x07"  # OSC 52: write the clipboard (BEL-terminated)
    "\x1b]0;HACKED\x1b\\"  # OSC 0: the window title (ST-terminated)
    "\x1b[2J\x1b[31m"  # CSI: clear the screen, red
    "\x1bP1$qm\x1b\\"  # DCS
    "\x9b2J\x9d52;c;SEFDS0VE\x9c"  # CSI and OSC as C1 controls
    "\x1bc"  # a single ESC sequence: reset the terminal
    "\x1b]52;c;unterminated"  # an OSC never ended
)
HOSTILE = "evil" + CONTROLS + SEQUENCES  # a text: a hostname, a reason, a label
# an interface name as /proc/net/dev can carry it (no blank, no colon, no slash, no NUL)
HOSTILE_NAME = "".join(c for c in HOSTILE if not c.isspace() and c not in ":/\0")
VISIBLE = "\\x1b]52;c;SEFDS0VE"  # what a user sees of the clipboard write: its escape, as text


def leaked(text: str, *, lines: bool = True) -> list[str]:
    """The characters of ``text`` a terminal would obey: C0 (but newlines and tabs, in a text
    of ``lines``), DEL, C1. Empty when nothing got through."""
    return sorted({f"{ord(c):#04x}" for c in text
                   if (ord(c) < 0x20 and not (lines and c in "\n\t")) or 0x7F <= ord(c) < 0xA0})


def hostile_tree(root: Path) -> tuple[Path, Path]:
    """A captured /proc and /sys (tests/data) with one more interface named HOSTILE_NAME and a
    hostname of HOSTILE: (procfs, sysfs)."""
    proc, sys = root / "proc", root / "sys"
    shutil.copytree(data_path(f"{PROCFS}/proc"), proc)
    shutil.copytree(data_path(f"{PROCFS}/sys"), sys)
    dev = proc / "net" / "dev"
    dev.write_text(dev.read_text() + f"{HOSTILE_NAME}: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n")
    (proc / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
    (proc / "sys" / "kernel" / "hostname").write_text(HOSTILE + "\n")
    iface = sys / "class" / "net" / HOSTILE_NAME
    iface.mkdir(parents=True)
    for attr, text in (("mtu", "1500"), ("operstate", "up"), ("carrier", "1"), ("speed", "1000"),
                       ("ifindex", "9"), ("type", "1")):
        (iface / attr).write_text(text + "\n")
    (iface / "device").mkdir()  # a physical NIC: on the grid
    return proc, sys

# one line of a node's stderr (the sampler's last words), every control but those that end a line
HOSTILE_LINE = "".join(c for c in HOSTILE if c not in "\n\r\x0b\x0c\x1c\x1d\x1e\x85")


def hostile_node(procfs: Path, sysfs: Path):
    """An asyncssh process factory (tests/echo_ssh.py) whose login name picks the node:
    ``names`` runs the real sampler on the hostile tree (its interface names and hostname
    travel in frames), ``exits`` says HOSTILE_LINE on stderr and exits 1, ``nopython`` says
    it has no python3 with HOSTILE_LINE after (exit 127)."""
    import asyncio

    import asyncssh

    from netui.collectors.ssh import sampler_command

    async def node(process: asyncssh.SSHServerProcess) -> None:
        scenario = process.get_extra_info("username")
        try:
            if scenario == "names":
                await _sampler(process, sampler_command(0.2, procfs=str(procfs), sysfs=str(sysfs)))
            elif scenario == "exits":
                process.stderr.write(f"Traceback (most recent call last):\n{HOSTILE_LINE}\n".encode())
                process.exit(1)
            elif scenario == "nopython":
                process.stderr.write(f"netui: no python3 on this node{HOSTILE_LINE}\n".encode())
                process.exit(127)
            else:
                process.exit(2)
        except (asyncssh.Error, OSError):
            pass

    async def _sampler(process, command: str) -> None:
        proc = await asyncio.create_subprocess_exec("sh", "-c", command, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)

        async def forward_stdin() -> None:
            for _ in range(10_000):
                data = await process.stdin.read(4096)
                if not data:
                    break
                proc.stdin.write(data)
            proc.stdin.close()

        feeding = asyncio.ensure_future(forward_stdin())
        try:
            for _ in range(100_000):  # bounded: ~20,000 s of frames at 0.2 s
                data = await proc.stdout.read(65536)
                if not data:
                    break
                process.stdout.write(data)
                await process.stdout.drain()
        finally:
            feeding.cancel()
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
        process.exit(0)

    return node


def hostile_ssh_server(directory: Path):
    """An asyncssh server on 127.0.0.1 playing the hostile nodes of ``hostile_node`` (the
    sampler's tree under ``directory``/tree); yields an ssh_config for it."""
    from tests.echo_ssh import loopback_ssh_server

    procfs, sysfs = hostile_tree(directory / "tree")
    (directory / "ssh").mkdir()
    return loopback_ssh_server(directory / "ssh", hostile_node(procfs, sysfs))
