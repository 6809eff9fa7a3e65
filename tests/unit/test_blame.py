"""The hold and the victim rule (model/blame.py): one stable name, the culprit and not its victims."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from netui.model.blame import HeldStragglers, victims_of
from netui.model.fleet import Fleet
from netui.model.straggler import Straggler, StragglerRules
from tests.synth import node_sample

G, M = 1e9, 1e6  # bits/s


def slow(node: str, *directions: str, two_way: bool = True, value: float = 1.0) -> Straggler:
    """A node found slow this interval in ``directions`` ("tx", "rx", …), its first at ``value``."""
    return Straggler(node, directions[0] if directions else "retrans", value, 10.0, f"{node}: slow", f"{node}: slow",
                     tuple(directions), two_way)


def ring(shaped: str = "acc3", n: int = 5) -> dict[str, tuple[float, float]]:
    """A ring of ``n`` (each node sends to the next) at 1 Gbit/s, ``shaped`` sending at
    150 Mbit/s and, its ACKs queued behind its data, receiving slowly too: (RX, TX) bits/s."""
    names = [f"acc{i}" for i in range(1, n + 1)]
    k = names.index(shaped)
    before, after = names[k - 1], names[(k + 1) % n]
    rates = {name: (1 * G, 1 * G) for name in names}
    rates[shaped] = (0.24 * G, 0.15 * G)
    rates[before] = (1 * G, 0.24 * G)  # sends to the shaped node
    rates[after] = (0.15 * G, 1 * G)  # receives from it
    return rates


def fleet_of(rates: dict[str, tuple[float, float]], rules: StragglerRules | None = None) -> Fleet:
    fleet = Fleet(list(rates), history_s=30)
    if rules is not None:
        fleet.straggler_rules = rules
    fleet.k = 0  # the next sample's index
    return fleet


def tick(fleet: Fleet, rates: dict[str, tuple[float, float]], peers=None) -> list[str]:
    """One interval at constant ``rates``: the stragglers' names, the status line's first."""
    for name, (rx, tx) in rates.items():
        node = fleet[name]
        if node.samples_seen == 0:
            node.observe(node_sample(0, rx_bps=rx, tx_bps=tx))
    fleet.k += 1
    for name, (rx, tx) in rates.items():
        fleet[name].observe(node_sample(fleet.k, rx_bps=rx, tx_bps=tx))
    fleet.update_stragglers(peers=peers)
    return [s.node for s in fleet.stragglers]


# --- the victim rule ------------------------------------------------------------------------------

def test_in_a_ring_the_node_slow_both_ways_is_the_culprit_and_its_neighbours_its_victims():
    found = [slow("acc3", "tx", "rx"), slow("acc2", "tx"), slow("acc4", "rx")]
    assert victims_of(found) == {"acc2": ("acc3",), "acc4": ("acc3",)}
    # nobody slow both ways: a receiver slow at the rate a slow sender sends is its victim
    # (one flow, seen at both ends), whatever the traffic's pattern
    assert victims_of([slow("acc3", "tx", value=150), slow("acc2", "tx", value=240),
                       slow("acc4", "rx", value=140)]) == {"acc4": ("acc3",)}
    assert victims_of([slow("n3", "tx", two_way=False, value=150), slow("n4", "rx", two_way=False, value=151)]) == \
        {"n4": ("n3",)}
    # and the direction says nothing more: the others are stragglers
    assert victims_of([slow("acc3", "tx", value=150), slow("acc2", "tx", value=240),
                       slow("acc4", "rx", value=50)]) == {}
    # unless a culprit is known otherwise (a straggler held, a slow link, a pair test's suspect)
    assert victims_of([slow("acc3", "tx"), slow("acc2", "tx"), slow("acc4", "rx")], {"acc3"}) == \
        {"acc2": ("acc3",), "acc4": ("acc3",)}
    # several culprits: a victim is slowed by one of them
    found = [slow("acc3", "tx", "rx"), slow("acc7", "tx", "rx"), slow("acc4", "rx")]
    assert victims_of(found) == {"acc4": ("acc3", "acc7")}
    assert Straggler("acc4", "rx", 1, 2, "", slowed_by=("acc3", "acc7")).cause == "slowed by acc3 or acc7"
    # an excess is the node's own, and one-way traffic (iperf3 pairs) says nothing of direction
    assert victims_of([slow("acc3", "tx", "rx"), slow("acc5")]) == {}
    assert victims_of([slow("acc3", "tx", "rx"), slow("acc4", "rx", two_way=False)]) == {}
    # the rule can be turned off
    assert victims_of(found, rules=StragglerRules(victims=False)) == {}


def test_per_peer_flows_make_the_victim_rule_exact():
    found = [slow("acc3", "tx", "rx"), slow("acc2", "tx"), slow("acc4", "rx"), slow("acc6", "tx")]
    mb = 1e6 / 8  # bytes/s of 1 Mbit/s
    peers = {
        "acc2": {"acc3": (240 * mb, 1000 * mb), "acc1": (1000 * mb, 1000 * mb)},  # slow only towards acc3
        "acc4": {"acc3": (1000 * mb, 150 * mb)},  # slow only from acc3
        "acc6": {"acc3": (900 * mb, 900 * mb), "acc5": (100 * mb, 1000 * mb)},  # slow towards acc5: its own
        "acc1": {"acc2": (1000 * mb, 1000 * mb)},
        "acc5": {"acc6": (1000 * mb, 100 * mb)},
    }
    assert victims_of(found, peers=peers) == {"acc2": ("acc3",), "acc4": ("acc3",)}
    # with flows a pattern the direction cannot read: acc4 slow both ways, only from and to acc3
    peers["acc4"] = {"acc3": (150 * mb, 150 * mb), "acc5": (1000 * mb, 1000 * mb)}
    assert victims_of([slow("acc3", "tx", "rx"), slow("acc4", "tx", "rx")], {"acc3"}, peers=peers) == \
        {"acc4": ("acc3",)}
    # a node the flows do not cover is judged by direction
    assert victims_of([slow("acc3", "tx", "rx"), slow("acc9", "rx")], peers=peers) == {"acc9": ("acc3",)}



def test_with_flows_only_the_direction_a_flow_carries_data_counts():
    """A ring as sock_diag sees it: each node's flow to the next carries data, the one from
    the one before carries data in; the other way of each is only ACKs (2 %), never a slow
    flow. acc3 sends at 150 Mbit/s, so acc4 receives slowly from acc3 alone."""
    mb = 1e6 / 8
    names = ["acc1", "acc2", "acc3", "acc4", "acc5"]
    rate = {"acc3": 150 * mb}
    peers: dict = {n: {} for n in names}
    for i, n in enumerate(names):
        nxt = names[(i + 1) % 5]
        data = rate.get(n, 1000 * mb)
        peers[n][nxt] = (data, 0.02 * data)  # (TX, RX) of n's flow with nxt
        peers[nxt][n] = (0.02 * data, data)
    found = [slow("acc3", "tx", value=150), slow("acc4", "rx", value=150)]
    assert victims_of(found, peers=peers) == {"acc4": ("acc3",)}
    # a receiver slow from a node that is not slow sending is no victim of it
    assert victims_of([slow("acc4", "rx", value=150)], peers=peers) == {}
    # acc4 slow receiving from acc3 while acc3 is known at fault (held, a slow link)
    assert victims_of([slow("acc4", "rx", value=150)], {"acc3"}, peers=peers) == {"acc4": ("acc3",)}


def retransmits(node: str) -> Straggler:
    return Straggler(node, "retrans", 0.0013, 0.0, f"{node}: TCP retransmits", "", (), False)


def test_retransmits_all_on_flows_with_the_culprit_make_a_victim_of_it():
    mb = 1e6 / 8
    # (TX, RX, RTT, retransmits/s, sockets) as PeerRates
    peers = {"acc2": {"acc3": (400 * mb, 8 * mb, 0.002, 35.0, 1), "acc1": (20 * mb, 1000 * mb, 0.0001, 0.0, 1)},
             "acc3": {"acc4": (150 * mb, 3 * mb, 0.05, 0.0, 1), "acc2": (8 * mb, 400 * mb, 0.0001, 0.0, 1)},
             "acc4": {"acc3": (3 * mb, 150 * mb, 0.0001, 0.0, 1)},
             "acc6": {"acc5": (1000 * mb, 20 * mb, 0.0001, 50.0, 1)}}
    found = [slow("acc3", "tx", value=150 * mb), slow("acc4", "rx", value=150 * mb), retransmits("acc2")]
    assert victims_of(found, peers=peers) == {"acc4": ("acc3",), "acc2": ("acc3",)}
    # retransmits to a node that is no culprit are the node's own (a lossy link of its own)
    assert victims_of(found + [retransmits("acc6")], peers=peers)["acc2"] == ("acc3",)
    assert "acc6" not in victims_of(found + [retransmits("acc6")], peers=peers)
    # no culprit, or no flows that say where the retransmits go: a straggler
    assert victims_of([retransmits("acc2")], peers=peers) == {}
    assert "acc2" not in victims_of(found, {"acc3"})
    peers["acc2"] = {"acc3": (400 * mb, 8 * mb, 0.002, 0.0, 1)}  # (they went on a socket since closed)
    assert "acc2" not in victims_of(found, peers=peers)

def test_a_ring_with_one_shaped_node_names_it_alone_and_marks_its_neighbours():
    fleet = fleet_of(ring())
    assert tick(fleet, ring()) == []  # one interval is no straggler yet
    assert tick(fleet, ring()) == ["acc3"]
    assert {s.node: s.cause for s in fleet.victims} == {"acc2": "slowed by acc3", "acc4": "slowed by acc3"}
    assert fleet["acc2"].straggler is None and fleet["acc2"].victim.cause == "slowed by acc3"
    assert fleet["acc3"].straggler_rank == 0 and fleet["acc2"].straggler_rank > 0
    assert any(r.startswith("acc4: slowed by acc3: RX 150 Mb/s") for r in fleet["acc4"].reasons)


# --- the hold -------------------------------------------------------------------------------------

def test_a_one_interval_blip_is_never_named_and_a_real_cause_shows_within_three():
    held = HeldStragglers()
    blip = [slow("n2", "tx", "rx")]
    for _ in range(10):  # a blip every third interval: never 2 of 3
        assert held.update(blip) == ([], [])
        assert held.update([]) == ([], [])
        assert held.update([]) == ([], [])
    held = HeldStragglers()
    # a real cause that one interval misses still shows by its third interval
    assert [s.node for s in held.update(blip)[0]] == []
    assert [s.node for s in held.update([])[0]] == []
    assert [s.node for s in held.update(blip)[0]] == ["n2"]


def test_a_reason_flipping_between_rules_does_not_restart_the_count_and_clears_after_m_clean():
    held = HeldStragglers(StragglerRules(flag_intervals=2, window_intervals=3, clear_intervals=3))
    rules = [[slow("n3", "tx")], [slow("n3", "rx")], [slow("n3")], [slow("n3", "tx")]]
    shown = [[s.metric for s in held.update(found)[0]] for found in rules]
    assert shown == [[], ["rx"], ["retrans"], ["tx"]]
    # cleared only after three clean intervals in a row: the last finding is shown meanwhile
    assert [[s.node for s in held.update([])[0]] for _ in range(3)] == [["n3"], ["n3"], []]


def test_stragglers_keep_the_order_in_which_they_became_one():
    held = HeldStragglers()
    held.update([slow("n5", "tx", "rx")])
    held.update([slow("n5", "tx", "rx")])
    # n1 comes later and sorts before n5 by every figure: it still comes second
    held.update([slow("n1"), slow("n5", "tx")])
    for _ in range(5):
        assert [s.node for s in held.update([slow("n1"), slow("n5", "tx")])[0]] == ["n5", "n1"]


def test_victims_are_held_too_and_a_culprit_stays_one_while_held():
    held = HeldStragglers()
    both = [slow("acc3", "tx", "rx"), slow("acc2", "tx"), slow("acc4", "rx")]
    held.update(both)
    stragglers, victims = held.update(both)
    assert [s.node for s in stragglers] == ["acc3"] and [v.node for v in victims] == ["acc2", "acc4"]
    # acc3 is slow one way only for a while: still the culprit, its neighbours still victims
    for _ in range(5):
        stragglers, victims = held.update([slow("acc3", "tx"), slow("acc2", "tx"), slow("acc4", "rx")])
        assert [s.node for s in stragglers] == ["acc3"], stragglers
        assert [(v.node, v.cause) for v in victims] == [("acc2", "slowed by acc3"), ("acc4", "slowed by acc3")]
    # a victim missing one interval stays marked
    stragglers, victims = held.update([slow("acc3", "tx", "rx"), slow("acc4", "rx")])
    assert [v.node for v in victims] == ["acc2", "acc4"]


def test_the_hold_costs_nothing_for_nodes_never_found():
    held = HeldStragglers()
    for _ in range(5):
        held.update([slow("n1", "tx", "rx")])
    for _ in range(4):
        held.update([])
    assert held._tracks == {}  # a node clean for long enough is forgotten


def test_a_ring_capped_by_its_senders_names_the_shaped_sender_and_not_its_receiver():
    # the lab's ring at 1 Gbit/s a flow (iperf3 -b 1G), node3's egress shaped to 150 Mbit/s:
    # its sender keeps its pace (node3's ACKs are enough), so node3 is slow in TX only and
    # node4 in RX only, at the same rate
    rates = {f"node{i}": (1 * G, 1 * G) for i in range(1, 6)}
    rates["node3"] = (1 * G, 0.144 * G)
    rates["node4"] = (0.143 * G, 1 * G)
    fleet = fleet_of(rates)
    assert tick(fleet, rates) == []  # held: named from the second interval
    for _ in range(6):
        tick(fleet, rates)
        assert [s.node for s in fleet.stragglers] == ["node3"]
        assert [(s.node, s.cause) for s in fleet.victims] == [("node4", "slowed by node3")]


def test_stragglers_named_in_one_interval_keep_that_intervals_order():
    held = HeldStragglers()
    found = [slow(f"n{i}", "tx", "rx") for i in (9, 3, 7, 1, 5)]
    held.update(found)
    for _ in range(3):
        assert [s.node for s in held.update(found)[0]] == ["n9", "n3", "n7", "n1", "n5"]


def test_the_link_the_retransmitting_flows_have_in_common_is_named():
    """A ring where node3's link loses: node2→node3 and node3→node4 retransmit (2 % of their
    segments), the other flows do not. node3's link has two votes, its partners one each."""
    from netui.model.blame import SEGMENT_BYTES, lossy_links

    mb = 1e6 / 8
    seg = 1000 * mb / SEGMENT_BYTES  # segments/s of a 1 Gbit/s flow

    def ring(lossy: dict[tuple[str, str], float]) -> dict:
        names = [f"acc{i}" for i in range(1, 6)]
        peers: dict = {n: {} for n in names}
        for i, a in enumerate(names):
            b = names[(i + 1) % 5]
            peers[a][b] = (1000 * mb, 20 * mb, 0.0001, lossy.get((a, b), 0.0) * seg, 1)
            peers[b][a] = (20 * mb, 1000 * mb, 0.0001, 0.0, 1)
        return peers

    peers = ring({("acc2", "acc3"): 0.02, ("acc3", "acc4"): 0.02})
    both = [retransmits("acc2"), retransmits("acc3")]
    assert lossy_links(peers, ["acc2", "acc3"]) == {"acc3": (("acc2", "acc3"), ("acc3", "acc4"))}
    assert victims_of(both, peers=peers) == {"acc2": ("acc3",)}
    # named only among the nodes found: a link nobody was flagged for is no culprit
    assert lossy_links(peers, ["acc2"]) == {}
    # one retransmitting flow, or a tie, names no link (nothing says which end loses)
    assert lossy_links(ring({("acc2", "acc3"): 0.02}), ["acc2", "acc3"]) == {}
    tie = ring({("acc1", "acc2"): 0.02, ("acc2", "acc3"): 0.02, ("acc3", "acc4"): 0.02})
    assert lossy_links(tie, ["acc2", "acc3"]) == {}
    # the flows vote with what they lose: a neighbour's few retransmits elsewhere (a busy
    # CPU's spurious ones) do not make a tie of it
    noisy = ring({("acc1", "acc2"): 0.003, ("acc2", "acc3"): 0.02, ("acc3", "acc4"): 0.02})
    assert lossy_links(noisy, ["acc2", "acc3"]) == {"acc3": (("acc2", "acc3"), ("acc3", "acc4"))}
    # a flow's few spurious retransmits (under min_retrans_ratio of its segments) do not vote
    assert lossy_links(ring({("acc2", "acc3"): 0.0005, ("acc3", "acc4"): 0.02}), ["acc2", "acc3"]) == {}
    # held: node3 alone is the straggler, its reason names the flows; node2 is its victim
    held = HeldStragglers()
    for _ in range(3):
        stragglers, victims = held.update(both, peers=peers)
    assert [s.node for s in stragglers] == ["acc3"]
    assert "acc2→acc3, acc3→acc4 have in common" in stragglers[0].reason
    assert [(v.node, v.slowed_by) for v in victims] == [("acc2", ("acc3",))]
    # flows read late (a few intervals after they opened): node2, held before they said who
    # slows it, stops being a straggler once it has been a victim two intervals in a row
    held = HeldStragglers()
    for _ in range(2):
        stragglers, _ = held.update(both)
    assert [s.node for s in stragglers] == ["acc2", "acc3"] or [s.node for s in stragglers] == ["acc3", "acc2"]
    stragglers, _ = held.update(both, peers=peers)
    assert "acc2" in [s.node for s in stragglers]  # one interval is not yet enough
    stragglers, victims = held.update(both, peers=peers)
    assert [s.node for s in stragglers] == ["acc3"] and [v.node for v in victims] == ["acc2"]
    # a flow not read yet beside a node (its first reading: rates unknown) names nobody
    partial = ring({("acc1", "acc2"): 0.008, ("acc2", "acc3"): 0.02})
    partial["acc3"]["acc4"] = (None, None, 0.0001, None, 1)
    assert lossy_links(partial, ["acc2", "acc3"]) == {}


@given(st.lists(st.booleans(), max_size=40), st.integers(1, 8))
def test_a_window_of_bits_counts_as_the_last_intervals_do(values, size):
    """The hold's windows (``_push``): after each interval, its count is how many of the last
    ``size`` intervals were set, and it is empty (0) exactly when none was."""
    from netui.model.blame import _push

    window, mask = 0, (1 << size) - 1
    for i, v in enumerate(values):
        window = _push(window, v, mask)
        last = values[max(0, i + 1 - size):i + 1]
        assert window.bit_count() == sum(last)
        assert bool(window) == any(last)
