"""Who talks to whom, on screen: the node screen's top peers, and the peer matrix (P) at 80×24."""

from __future__ import annotations

from dataclasses import replace

import pytest

from netui.engine.monitor import Monitor
from netui.model.flows import PeerCounters, PeerSample
from netui.ui.app import make_app
from netui.ui.flows import PeerMatrixScreen, PeerPanel
from tests.pilot import escape_to_grid, on_screen, plain, poll, pressed
from tests.synth import ScriptedSource, node_sample

ADDRESS = {"gpu01": "198.18.0.1", "gpu02": "198.18.0.2", "gpu03": "198.18.0.3"}
# bytes/s each node sends to each peer (a ring, gpu03 slowed), RTT µs, retransmits/s
SENDS = {"gpu01": {"gpu02": (1.25e9, 200, 0)}, "gpu02": {"gpu03": (1.2e9, 250, 0)},
         "gpu03": {"gpu01": (0.05e9, 9000, 40), "192.0.2.77": (1e6, 300, 0)}}


def peer_sample(name: str, t: int) -> PeerSample:
    rows = []
    for peer, (rate, rtt, retrans) in SENDS[name].items():
        received = next((v[0] for src, sends in SENDS.items() for p, v in sends.items()
                         if src == peer and p == name), 0.0)
        rows.append(PeerCounters(ADDRESS.get(peer, peer), 2, int(rate * t), int(received * t), retrans * t, int(rate),
                                 rtt, rtt))
    for src, sends in SENDS.items():  # the nodes that send here and are not sent to
        if name in sends and not any(r.address == ADDRESS[src] for r in rows):
            rows.append(PeerCounters(ADDRESS[src], 1, 0, int(sends[name][0] * t), 0, 0, sends[name][1], sends[name][1]))
    return PeerSample(1000.0 + t, sockets=3, peers_seen=len(rows), peers=tuple(rows),
                      local_addresses=(ADDRESS[name],))


def app_with_peers():
    sources = [ScriptedSource(n, lambda k, n=n: replace(node_sample(k, rx_bps=9e9, tx_bps=9e9), peers=peer_sample(n, k)))
               for n in ADDRESS]
    return make_app(Monitor(sources, interval_s=1.0, history_s=60), autostart=False)


@pytest.mark.slow
async def test_the_peer_matrix_at_80x24_shows_the_flows_between_nodes_and_the_worst_pairs():
    app = app_with_peers()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(app, pilot, 3)
        screen = await pressed(pilot, "P")
        assert isinstance(screen, PeerMatrixScreen)
        text = on_screen(app)
        assert "throughput" in text and "gpu01" in text and "gpu03" in text
        assert "10G" in text  # gpu01 → gpu02 at 1.25 GB/s: 10 Gb/s
        worst = text[text.index("worst pairs"):]
        assert worst.index("gpu03 → gpu01") < worst.index("gpu01 → gpu02")  # the slowest flow first
        assert "192.0.2.77" not in text  # not a watched node
        assert all(len(line) <= 80 for line in text.splitlines())
        await pressed(pilot, "m")
        text = on_screen(app)
        assert "RTT" in text and "9.00 ms" in text
        worst = text[text.index("worst pairs"):]
        first = worst.splitlines()[1]
        assert "gpu03" in first and "gpu01" in first and "9.00 ms" in first  # the longest RTT first
        await pressed(pilot, "m")
        text = on_screen(app)
        assert "retransmits" in text and "40" in text
        await escape_to_grid(pilot)


@pytest.mark.slow
async def test_the_node_screen_lists_its_top_peers_by_name_or_address():
    app = app_with_peers()
    async with app.run_test(size=(120, 60)) as pilot:
        await poll(app, pilot, 3)
        app.open_node("gpu03")
        await pilot.pause()
        text = plain(app.screen.query_one(PeerPanel))
        assert "gpu01" in text and "192.0.2.77" in text and "gpu02" in text
        assert text.index("gpu01") < text.index("192.0.2.77")  # busiest first
        assert "9.00 ms" in text and "3 sockets" in text
