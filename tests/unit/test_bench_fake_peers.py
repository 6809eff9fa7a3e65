"""bench_fleet's ``+peers`` (tests/bench/fake_peers.py): the fake nodes' "peers" field is the
sampler's, and the monitor maps each node's ring neighbours to the fake nodes they are."""

from netui.collectors.frames import FrameDecoder
from netui.collectors.peers import parse_peers
from netui.model.flows import AddressBook, flow_rates, peer_flows
from tests.bench.fake_fleet import NodeFrames, node_name
from tests.bench.fake_peers import JOB, LAUNCHER, MONITOR, STORAGE, FakePeers, node_address, node_of_user, peers_user

NODES = 8


def readings(nodes: int, seconds: int) -> list[list]:
    """Every node's PeerSample at 100, 101, ... s."""
    fake = [FakePeers(i, nodes) for i in range(nodes)]
    return [[parse_peers(f.field(100.0 + t)) for f in fake] for t in range(seconds)]


def test_each_node_has_its_own_address_and_its_job_s_peers():
    last = readings(NODES, 2)[-1]
    for i, s in enumerate(last):
        assert s.available and not s.capped
        assert s.local_addresses == (node_address(i),)
        assert node_address(i).startswith(("198.18.", "198.19."))
        right, left = node_address((i + 1) % NODES), node_address((i - 1) % NODES)
        addresses = [p.address for p in s.peers]  # busiest first
        assert set(addresses[:2]) == {right, left} and addresses[2:] == [STORAGE, MONITOR, LAUNCHER]
        assert s.sockets == sum(count for _, count, *_ in JOB)
    assert len({s.local_addresses for s in last}) == NODES


def test_the_rates_grow_every_reading_at_the_job_s_rates():
    prev, cur = readings(NODES, 3)[-2:]
    for i, (p, c) in enumerate(zip(prev, cur)):
        rates = flow_rates(p, c).rates
        ring = rates[node_address((i + 1) % NODES)]  # what it sends on
        assert 0.8 * 4 * 600e6 <= ring.tx_bytes_per_s <= 1.2 * 4 * 600e6  # the all-reduce's, a fifth either way
        assert 0 < ring.rtt_s < 0.001 and ring.retrans_per_s is not None
        assert all(r.tx_bytes_per_s is not None and r.rx_bytes_per_s is not None for r in rates.values())


def test_the_ring_neighbours_map_to_the_fake_nodes_and_nothing_else_does():
    prev, cur = readings(NODES, 2)
    names = [node_name(i) for i in range(NODES)]
    book = AddressBook(zip(names, cur))
    flows = peer_flows({n: flow_rates(p, c) for n, p, c in zip(names, prev, cur)}, book)
    for i, name in enumerate(names):
        assert set(flows[name]) == {names[(i + 1) % NODES], names[(i - 1) % NODES]}
    assert book.node(MONITOR) is None and book.node(STORAGE) is None


def test_a_fake_frame_carries_the_field_as_the_sampler_does():
    field = FakePeers(3, NODES).field(100.0)
    sample = FrameDecoder().decode(NodeFrames().frame(0, 1.0, 100.0, peers=field).partition(b"\n")[2])
    assert sample.peers == parse_peers(field)


def test_the_ssh_user_names_the_node():
    assert node_of_user(peers_user(5, 64)) == (5, 64)
    assert node_of_user("root") is None and node_of_user(None) is None and node_of_user("peers-64-64") is None
