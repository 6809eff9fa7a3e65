"""The SSH collector's decisions that need no network: states from errors, config."""

from __future__ import annotations

import asyncio

import asyncssh
import pytest

from netui.collectors.frames import FrameError
from netui.collectors.ssh_connect import ResolvedHost, SshSettings, classify, resolve
from netui.model.node import NodeState


@pytest.mark.parametrize("exc, state, words", [
    (asyncssh.PermissionDenied("no more methods"), NodeState.AUTH_FAILED, "authentication failed"),
    (ConnectionRefusedError(111, "Connection refused"), NodeState.DOWN, "connection refused"),
    (asyncio.TimeoutError(), NodeState.DOWN, "timed out"),
    (OSError(113, "No route to host"), NodeState.DOWN, "No route to host"),
    (asyncssh.ConnectionLost("peer closed"), NodeState.DOWN, "connection lost"),
    (FrameError("truncated frame"), NodeState.PARSE_ERROR, "bad data"),
    (asyncio.IncompleteReadError(b"abc", 10), NodeState.PARSE_ERROR, "bad data"),
])
def test_errors_become_node_states_with_reasons(exc, state, words):
    failure = classify(exc, None)
    assert failure.state is state
    assert words in failure.reason


def test_unverifiable_host_key_is_unknown_or_changed_by_known_hosts(tmp_path):
    key = asyncssh.generate_private_key("ssh-ed25519")
    known = tmp_path / "known_hosts"
    known.write_text("")
    resolved = ResolvedHost("198.18.0.9", 22, "root", [str(known)], None, "n9")
    exc = asyncssh.HostKeyNotVerifiable("Host key is not trusted")
    assert classify(exc, resolved).state is NodeState.HOST_KEY_UNKNOWN
    known.write_text(f"198.18.0.9 {key.export_public_key().decode()}")
    assert classify(exc, resolved).state is NodeState.HOST_KEY_CHANGED


def test_resolve_applies_ssh_config(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host gpu*\n    HostName 198.18.0.%h\n    User trainer\n    Port 2222\n"
        "    UserKnownHostsFile /tmp/kh1\n    ProxyJump bastion\n"
        "Host other\n    HostName 198.18.0.7\n"
    )
    r = resolve(SshSettings(config_paths=[str(config)]), "gpu5", None, None)
    assert (r.port, r.user, r.proxy_jump, r.known_hosts) == (2222, "trainer", "bastion", ["/tmp/kh1"])
    r = resolve(SshSettings(config_paths=[str(config)], user="alice"), "other", None, 22)
    assert (r.host, r.user, r.proxy_jump) == ("198.18.0.7", "alice", None)


def test_aes_gcm_is_offered_first_unless_ssh_config_names_ciphers(tmp_path):
    from netui.collectors.ssh_connect import SshConnector

    plain = tmp_path / "plain"
    plain.write_text("Host *\n    User root\n")
    own = tmp_path / "own"
    own.write_text("Host *\n    Ciphers chacha20-poly1305@openssh.com\n")
    kwargs = SshConnector(SshSettings(config_paths=[str(plain)]))._kwargs(None, None)
    assert kwargs["encryption_algs"][0] == "aes128-gcm@openssh.com"
    assert "chacha20-poly1305@openssh.com" in kwargs["encryption_algs"]  # still negotiable
    assert "encryption_algs" not in SshConnector(SshSettings(config_paths=[str(own)]))._kwargs(None, None)
