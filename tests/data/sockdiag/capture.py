"""Capture a real sock_diag dump: the raw netlink answers of the kernel to netui's requests
(collectors/sampler.py diag_request, without the loopback filter), with known loopback flows
open. Run from the repository root: python3 tests/data/sockdiag/capture.py tests/data/sockdiag
Only 127.0.0.1 and ::1 are used."""
import json
import os
import platform
import socket
import sys

sys.path.insert(0, ".")
from netui.collectors import sampler  # noqa: E402

out = sys.argv[1]
flows = []
keep = []
for family, host, sent, received in ((socket.AF_INET, "127.0.0.1", 1_000_000, 4096),
                                     (socket.AF_INET6, "::1", 300_000, 0),
                                     (socket.AF_INET6, "::ffff:127.0.0.1", 70_000, 1234)):
    lsn = socket.socket(family)
    lsn.bind((host, 0))
    lsn.listen()
    cli = socket.create_connection(lsn.getsockname()[:2])
    srv, _ = lsn.accept()
    cli.sendall(b"x" * sent)
    got = 0
    while got < sent:
        got += len(srv.recv(1 << 20))
    if received:
        srv.sendall(b"y" * received)
        got = 0
        while got < received:
            got += len(cli.recv(1 << 20))
    keep += [lsn, cli, srv]
    flows.append({"client": cli.getsockname()[:2], "server": srv.getsockname()[:2],
                  "client_sent": sent, "server_sent": received})
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, sampler.NETLINK_SOCK_DIAG)
for family, name in ((2, "inet"), (10, "inet6")):
    nl.send(sampler.diag_request(family, 1))
    chunks = []
    while True:
        buf = nl.recv(262144)
        chunks.append(buf)
        done, error = sampler.diag_sockets(buf, [], 1 << 30, True)
        if done:
            break
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(b"".join(chunks))
with open(os.path.join(out, "flows.json"), "w") as f:
    json.dump({"kernel": platform.release(), "flows": flows}, f, indent=1)
