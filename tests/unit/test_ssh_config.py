"""ConfigIndex: per host, a reduced ssh_config that asyncssh reads exactly as the whole file."""

from __future__ import annotations

import getpass
import os

import pytest
from asyncssh.config import SSHClientConfig

from netui.collectors.ssh_connect import SshSettings, resolve
from netui.collectors.ssh_config import ConfigIndex

CONFIG = """\
# globals first: they apply to every host
ServerAliveInterval 5
Host node1 node2
    Hostname 198.18.0.1
    Port 2201
Host node*
    User nodeuser
    IdentityFile ~/.ssh/id_node
Host !node3 node?
    Port 2299
Host=eq1
    Hostname eq.example
Host "quoted"
    Port 2
Match host 198.18.0.*
    User matched
Match originalhost node4
    Port 2444
    Include {extra}
Host *
    Port 2222
    User everyone
    ProxyJump none
"""

EXTRA = """\
Compression yes
Host node4
    Hostname 198.18.0.4
"""

HOSTS = ["node1", "node2", "node3", "node4", "node9", "node10", "NODE1", "eq1", "quoted", "other", "x.y.z"]


def _options(paths: list[str], host: str) -> dict:
    config = SSHClientConfig.load(None, paths, False, False, False, getpass.getuser(), (), host, ())
    return dict(config._options)  # noqa: SLF001 - the effective options are what we compare


@pytest.fixture
def config_file(tmp_path):
    extra = tmp_path / "extra.conf"
    extra.write_text(EXTRA)
    path = tmp_path / "ssh_config"
    path.write_text(CONFIG.format(extra=extra))
    return str(path)


@pytest.mark.parametrize("host", HOSTS)
def test_the_reduced_config_gives_asyncssh_the_same_options(config_file, host):
    index = ConfigIndex([config_file])
    try:
        reduced = index.paths_for(host)
        assert reduced != [config_file]
        assert _options(reduced, host) == _options([config_file], host)
        full = resolve(SshSettings(config_paths=[config_file]), host, None, None)
        assert resolve(SshSettings(config_paths=reduced), host, None, None) == full
    finally:
        index.close()


@pytest.mark.slow
def test_a_per_host_config_of_a_big_fleet_shrinks_to_one_block_per_host(tmp_path):
    blocks = "".join(f"Host gpu{i:04d}\n    Hostname 198.18.{i // 250}.{i % 250 + 1}\n    Port 22\n"
                     for i in range(2000))
    path = tmp_path / "ssh_config"
    path.write_text("User ops\n" + blocks + "Host gpu*\n    IdentityFile ~/.ssh/fleet\n")
    index = ConfigIndex([str(path)])
    try:
        (reduced,) = index.paths_for("gpu0420")
        text = open(reduced).read()
        assert "Host gpu0420\n" in text and "Host gpu0421\n" not in text
        assert text.count("\n") < 10  # a comment, the global line, two blocks
        assert _options([reduced], "gpu0420") == _options([str(path)], "gpu0420")
        assert _options([reduced], "gpu0420")["Hostname"] == "198.18.1.171"
        # hosts that keep the same lines share a file; the directory is private and goes at close
        assert index.paths_for("nothere") == index.paths_for("neither")
        directory = os.path.dirname(reduced)
        assert os.stat(directory).st_mode & 0o777 == 0o700
    finally:
        index.close()
    assert not os.path.exists(directory)


def test_a_line_shlex_cannot_split_reaches_asyncssh_which_names_it(tmp_path):
    path = tmp_path / "ssh_config"
    path.write_text('Host "unterminated\n    Port 1\n')
    index = ConfigIndex([str(path)])
    try:
        (reduced,) = index.paths_for("a")
        assert "unterminated" in open(reduced).read()
        with pytest.raises(Exception, match="line 2"):  # the comment line is line 1
            SSHClientConfig.load(None, [reduced], False, False, False, getpass.getuser(), (), "a", ())
    finally:
        index.close()
