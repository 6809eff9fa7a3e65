"""The OpenSSH files of a lab: keys, sshd_config per node, and the client's ssh_config.

Everything lives in the lab's private directory. Keys are ed25519 made by `ssh-keygen`
(~5 ms each); `StrictModes no` lets sshd read them even when the directory sits under
/tmp (lab-notes pitfall 3).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

SSHD = "/usr/sbin/sshd"  # absolute: sshd re-executes itself (lab-notes pitfall 2)
SSH_KEYGEN = "ssh-keygen"
KEYGEN_TIMEOUT_S = 20


def generate_keys(paths: Iterable[Path], comment: str = "netui-lab") -> None:
    """Create an ed25519 key pair at each path (path and path.pub), replacing old ones.

    The ssh-keygen runs go in parallel: a 64-node lab should not pay 64 × 5 ms in a row.
    """
    procs = []
    for path in paths:
        path.unlink(missing_ok=True)
        _pub(path).unlink(missing_ok=True)
        procs.append((path, subprocess.Popen(
            [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    failures = []
    for path, proc in procs:
        _, err = proc.communicate(timeout=KEYGEN_TIMEOUT_S)
        if proc.returncode != 0:
            failures.append(f"{path}: {err.decode(errors='replace').strip()}")
    if failures:
        raise RuntimeError("ssh-keygen failed: " + "; ".join(failures))


def _pub(path: Path) -> Path:
    return path.with_name(path.name + ".pub")


def public_key(path: Path) -> str:
    """'ssh-ed25519 AAAA…' of the key pair at `path` (comment dropped)."""
    kind, blob, *_ = _pub(path).read_text().split()
    return f"{kind} {blob}"


def write_sshd_config(path: Path, *, address: str, host_key: Path, pid_file: Path,
                      authorized_keys: Path) -> None:
    path.write_text(f"""\
# sshd of one lab node; started as: {SSHD} -D -e -f {path}
Port 22
ListenAddress {address}
HostKey {host_key}
PidFile {pid_file}
AuthorizedKeysFile {authorized_keys}
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxStartups 1000:30:1000
PrintMotd no
PrintLastLog no
UseDNS no
Subsystem sftp /usr/lib/openssh/sftp-server
""")


def write_known_hosts(path: Path, hosts: Iterable[tuple[str, str, str]]) -> None:
    """One line per (alias, address, public key), matching the host by address and alias."""
    path.write_text("".join(f"{address},{alias} {key}\n" for alias, address, key in hosts))


def write_ssh_config(path: Path, hosts: Iterable[tuple[str, str]], *, identity: Path,
                     known_hosts: Path) -> None:
    """`Host nodeK` → `HostName 198.18.0.x`; the common settings apply to every host."""
    blocks = "".join(f"Host {alias}\n    HostName {address}\n\n" for alias, address in hosts)
    path.write_text(f"""\
# netui lab: ssh -F {path} node1 hostname
{blocks}Host *
    User root
    Port 22
    IdentityFile {identity}
    IdentitiesOnly yes
    UserKnownHostsFile {known_hosts}
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    KexAlgorithms curve25519-sha256
    BatchMode yes
    ConnectTimeout 5
""")
