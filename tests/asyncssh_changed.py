"""asyncssh as a later version might be: the private internals netui's shims rely on renamed or
reworked, asyncssh itself still working. Imported, it changes asyncssh in this process.

``python -m tests.asyncssh_changed DIR`` then watches a real asyncssh server on 127.0.0.1 as
netui does (SshConnector, an echo session) and prints, as JSON, what came back and the shims'
states: netui must work the same, without the shims, and say why.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from asyncssh import crypto
from asyncssh.connection import SSHConnection
from asyncssh.crypto import cipher
from asyncssh.packet import SSHPacketLogger


def _change_asyncssh() -> None:
    # keepalive: _recv_data no longer restarts the timer through _reset_keepalive_timer
    recv_data = SSHConnection._recv_data

    def _recv_data(self):
        return recv_data(self)

    SSHConnection._recv_data = _recv_data
    # AES-GCM: the GCMCipher name is gone from asyncssh.crypto (asyncssh.encryption kept its own)
    del cipher.GCMCipher
    del crypto.GCMCipher
    # packet log: _log_packet no longer calls logger.packet itself
    log_packet = SSHPacketLogger._log_packet

    def _log_packet(self, *args):
        return log_packet(self, *args)

    SSHPacketLogger._log_packet = _log_packet


_change_asyncssh()


async def _watch(directory: Path) -> dict:
    from netui.collectors.asyncssh_shims import shim_states
    from netui.collectors.ssh_connect import SshConnector, SshSettings
    from tests.echo_ssh import echo_server, round_trips

    async with echo_server(directory) as config:
        connector = SshConnector(SshSettings(config_paths=[str(config)], connect_timeout_s=10))
        conn = await connector.connect("127.0.0.1", None, None)
        try:
            echoed = await round_trips(conn)
            cipher_name = conn.get_extra_info("send_cipher")
            lazy = "_keepalive_timer_callback" in vars(conn)  # lazy_keepalive's mark on a connection
        finally:
            conn.close()
            await conn.wait_closed()
            await connector.close()
    return {"echoed": echoed, "cipher": cipher_name, "lazy_keepalive": lazy,
            "states": {name: [s.applied, s.reason] for name, s in shim_states().items()}}


if __name__ == "__main__":
    from netui.engine import eventloop

    print(json.dumps(eventloop.run(asyncio.wait_for(_watch(Path(sys.argv[1])), 60))))
