"""/sys/class/infiniband → IbPort: the real procfs fixtures (hfi1, mlx4 with two ports, mlx5
with hw_counters), the synthetic trees of tests/data/fabric (legacy widths, "N/A (no PMA)",
netdev pairing, GIDs), odd trees, and garbage that must never raise."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netui.collectors.infiniband import (
    parse_counter,
    parse_infiniband,
    parse_rate_gbps,
    parse_state,
    read_infiniband,
    texts_from_grep,
)
from netui.model.fabric import IbPort, PortState
from tests.testdata import DATA, PROCFS, data_path, data_text

SYS = DATA / PROCFS / "sys"  # every test reaching it goes through data_path: missing is a failure
DUMP = f"{PROCFS}/sys/class/infiniband.DUMP.txt"
SYNTH = data_path("fabric")

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def real() -> dict[tuple[str, int], IbPort]:
    data_path(f"{PROCFS}/sys/class/infiniband")
    return parse_infiniband(read_infiniband(str(SYS)))


@pytest.fixture(scope="module")
def synth() -> dict[tuple[str, int], IbPort]:
    return parse_infiniband(read_infiniband(str(SYNTH / "node-t0" / "sys")))


def dump_texts() -> dict[str, str]:
    """The fixture's flat listing: ``path<TAB>value`` per file."""
    texts = {}
    for line in data_text(DUMP).splitlines():
        key, _, value = line.partition("\t")
        texts[key] = value + "\n"
    return texts


# ----------------------------------------------------------------------------- real fixtures


def test_real_tree_has_every_port(real):
    assert list(real) == [("hfi1_0", 1), ("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]


def test_mlx4_two_ports(real):
    p1, p2 = real["mlx4_0", 1], real["mlx4_0", 2]
    for p in (p1, p2):
        assert p.state == PortState(4, "ACTIVE") and p.active
        assert p.phys_state == PortState(5, "LinkUp")
        assert p.rate_gbps == 40.0
        assert p.link_layer == "InfiniBand"
        assert p.netdev is None  # the fixture has no device/ link
        assert p.hw_counters == {} and p.hw_scope is None
    assert p1.counters["port_xmit_wait"] == 3599 and p2.counters["port_xmit_wait"] == 3846
    # port_*_data count 4-byte words
    assert p1.counters["port_xmit_data"] == 26509113295
    assert p1.xmit_bytes == 26509113295 * 4
    assert p2.rcv_bytes == 2460436784 * 4


def test_mlx4_is_64_bit_without_unicast_counters(real):
    """No unicast_* files, yet port_xmit_data is far above 2**32: the kernel's NOIETF
    extended table (64-bit data/packets without unicast/multicast), not the legacy one."""
    p = real["mlx4_0", 1]
    assert "unicast_xmit_packets" not in p.counters
    assert p.extended
    assert p.counter_bits["port_xmit_data"] == 64
    assert p.counter_bits["port_rcv_data"] == 64  # this one is still below 2**32
    assert p.counter_bits["symbol_error"] == 16
    assert p.counter_bits["link_downed"] == 8
    assert p.counter_bits["local_link_integrity_errors"] == 4
    assert p.counter_bits["port_xmit_wait"] == 32


def test_mlx5_hw_counters(real):
    p = real["mlx5_0", 1]
    assert p.rate_gbps == 25.0
    assert p.extended and "unicast_xmit_packets" in p.counters
    assert p.counter_bits["unicast_rcv_packets"] == 64
    assert p.hw_scope == "port"
    assert p.hw_lifespan_ms == 10
    assert "lifespan" not in p.hw_counters
    assert len(p.hw_counters) == 24
    assert p.hw_counters["local_ack_timeout_err"] == 131
    assert p.hw_counters["out_of_sequence"] == 1
    assert p.hw_counters["req_cqe_error"] == 3481
    assert set(p.hw_counter_bits.values()) == {32}  # all q-counters; no np_/rp_ in this capture
    assert p.xmit_bytes == 2880761508848 * 4


def test_mlx5_hand_edited_phys_state_is_kept_as_printed(real):
    """SOURCES.txt: the fixture's phys_state "4: ACTIVE" was hand-written (a kernel prints
    "5: LinkUp"). It is parsed as printed; whether a port is up comes from ``state``."""
    p = real["mlx5_0", 1]
    assert p.phys_state == PortState(4, "ACTIVE")
    assert p.active


def test_hfi1(real):
    p = real["hfi1_0", 1]
    assert p.rate_gbps == 100.0
    assert p.extended  # OPA: 64-bit data counters, no unicast_*
    assert p.rcv_bytes == 345091702026 * 4
    assert p.counters["port_rcv_packets"] == 638036947


def test_reader_reads_what_the_listing_lists():
    """Every file read_infiniband returns is in the fixture's flat listing with the same text;
    what it leaves out are the HCA-level files (fw_ver, board_id, ...)."""
    listing = dump_texts()
    texts = read_infiniband(str(data_path(f"{PROCFS}/sys")))
    assert {k: v.strip() for k, v in texts.items()} == {k: listing[k].strip() for k in texts}
    assert {k.split("/")[-1] for k in set(listing) - set(texts)} <= {"fw_ver", "board_id", "hca_type", "node_guid"}
    assert parse_infiniband(listing) == parse_infiniband(texts)


def test_grep_lines():
    text = ("/sys/devices/pci0000:a2/0000:a2:00.0/infiniband/x/ports/1/state:4: ACTIVE\n"
            "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE\n"
            "/sys/class/infiniband/mlx5_0/ports/1/rate:100 Gb/sec (4X EDR)\n"
            "/sys/class/infiniband/mlx5_0/ports/1/rate:second line\n"
            "no colon here\n")
    assert texts_from_grep(text) == {
        "/sys/devices/pci0000": "a2/0000:a2:00.0/infiniband/x/ports/1/state:4: ACTIVE",
        "/sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE",
        "/sys/class/infiniband/mlx5_0/ports/1/rate": "100 Gb/sec (4X EDR)",
    }
    assert list(parse_infiniband(texts_from_grep(text))) == [("mlx5_0", 1)]


def test_keys_may_be_absolute_paths(real):
    texts = {"/sys/class/infiniband/" + k: v for k, v in read_infiniband(str(SYS)).items()}
    assert parse_infiniband(texts) == real


# ----------------------------------------------------------------------------- synthetic trees


def test_legacy_32_bit_counters(synth):
    p = synth["mlx4_0", 1]
    assert not p.extended
    assert p.counter_bits["port_xmit_data"] == 32
    assert p.counter_bits["port_rcv_packets"] == 32
    assert p.counters["port_xmit_data"] == 4_294_000_000


def test_no_pma_is_unknown_not_zero(synth):
    p = synth["i40iw0", 1]
    assert p.counters and all(v is None for v in p.counters.values())
    assert p.xmit_bytes is None and p.rcv_bytes is None
    assert p.rate_gbps == 10.0  # "10 Gb/sec (4X)": no speed suffix
    assert p.link_layer == "Ethernet"


def test_netdev_pairing(synth):
    assert synth["mlx5_0", 1].netdev == "enp1s0f0np0"
    assert synth["mlx5_1", 1].netdev == "enp1s0f1np1"
    # several ports on one PCI function: max(dev_id, dev_port) + 1 == port; the parent, not
    # the IPoIB child that shares its dev_id
    assert synth["mlx4_0", 1].netdev == "ib0"
    assert synth["mlx4_0", 2].netdev == "ib1"
    assert synth["i40iw0", 1].netdev is None


def test_gid_attrs(synth):
    p = synth["mlx5_0", 1]
    assert p.gid_types == {0: "IB/RoCE v1", 1: "RoCE v2", 2: "IB/RoCE v1", 3: "RoCE v2"}
    assert set(p.gid_netdevs.values()) == {"enp1s0f0np0"}


def test_gid_ndevs_pair_when_the_pci_function_says_nothing():
    texts = {"mlx5_0/ports/1/state": "4: ACTIVE\n", "mlx5_0/ports/1/gid_attrs/ndevs/1": "bond0\n",
             "mlx5_0/ports/1/gid_attrs/ndevs/0": "bond0\n", "mlx5_0/ports/1/gid_attrs/types/0": "IB/RoCE v1\n"}
    assert parse_infiniband(texts)["mlx5_0", 1].netdev == "bond0"


def test_single_netdev_without_index_is_paired():
    texts = {"rxe0/ports/1/state": "4: ACTIVE\n", "rxe0/device/net/eth0": ""}
    assert parse_infiniband(texts)["rxe0", 1].netdev == "eth0"


def test_congestion_counters_are_64_bit_and_vport_copies_32(synth):
    p = synth["mlx5_0", 1]
    assert p.hw_counter_bits["np_cnp_sent"] == 64
    assert p.hw_counter_bits["rx_icrc_encapsulated"] == 64
    assert p.hw_counter_bits["out_of_sequence"] == 32
    texts = {"mlx5_0/ports/1/hw_counters/vport_out_of_sequence": "5\n",
             "mlx5_0/ports/1/hw_counters/some_new_counter": "5\n"}
    bits = parse_infiniband(texts)["mlx5_0", 1].hw_counter_bits
    assert bits == {"vport_out_of_sequence": 32, "some_new_counter": 64}


def test_a_value_wider_than_its_table_widens_the_counter():
    texts = {"x/ports/1/counters/symbol_error": "70000\n", "x/ports/1/hw_counters/out_of_sequence": "5000000000\n"}
    p = parse_infiniband(texts)["x", 1]
    assert p.counter_bits["symbol_error"] == 64
    assert p.hw_counter_bits["out_of_sequence"] == 64


def test_device_level_hw_counters():
    texts = {"mlx5_0/ports/1/state": "4: ACTIVE\n", "mlx5_0/ports/2/state": "4: ACTIVE\n",
             "mlx5_0/hw_counters/out_of_sequence": "7\n", "mlx5_0/hw_counters/lifespan": "10\n",
             "mlx5_1/ports/1/hw_counters/out_of_sequence": "1\n", "mlx5_1/hw_counters/out_of_sequence": "9\n"}
    ports = parse_infiniband(texts)
    for n in (1, 2):
        assert ports["mlx5_0", n].hw_counters == {"out_of_sequence": 7}
        assert ports["mlx5_0", n].hw_scope == "device"
        assert ports["mlx5_0", n].hw_lifespan_ms == 10
    assert ports["mlx5_1", 1].hw_counters == {"out_of_sequence": 1}  # its own come first
    assert ports["mlx5_1", 1].hw_scope == "port"


# ----------------------------------------------------------------------------- value parsers


@pytest.mark.parametrize("text, expected", [
    ("4: ACTIVE\n", PortState(4, "ACTIVE")),
    ("1: DOWN", PortState(1, "DOWN")),
    ("5: ACTIVE_DEFER\n", PortState(5, "ACTIVE_DEFER")),
    ("4", PortState(4, "ACTIVE")),
    ("ACTIVE", PortState(4, "ACTIVE")),
    ("9: \n", PortState(9, None)),
    ("", None),
    ("garbage", None),
    (None, None),
])
def test_parse_state(text, expected):
    assert parse_state(text) == expected


def test_parse_phys_state_with_a_space_in_the_name():
    from netui.collectors.infiniband import PHYS_STATE_NAMES
    assert parse_state("7: Phy Test\n", PHYS_STATE_NAMES) == PortState(7, "Phy Test")
    assert parse_state("5", PHYS_STATE_NAMES) == PortState(5, "LinkUp")


@pytest.mark.parametrize("text, expected", [
    ("100 Gb/sec (4X EDR)\n", 100.0),
    ("2.5 Gb/sec (1X SDR)\n", 2.5),
    ("14 Gb/sec (1X FDR)", 14.0),
    ("400 Gb/sec (4X NDR)\n", 400.0),
    ("10 Gb/sec (4X)\n", 10.0),
    ("", None),
    ("fast", None),
    ("100\n", None),
    (None, None),
])
def test_parse_rate(text, expected):
    assert parse_rate_gbps(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("0\n", 0), ("18446744073709551615\n", (1 << 64) - 1), ("18446744073709551616", None),
    ("N/A (no PMA)\n", None), ("-1", None), ("", None), ("1e3", None), ("٣", None), (None, None),
])
def test_parse_counter(text, expected):
    assert parse_counter(text) == expected


def test_absurd_numbers_in_paths_and_values_do_not_raise():
    """int() refuses strings over 4300 digits with ValueError: indexes and states are bounded."""
    long = "9" * 5000
    texts = {f"m/ports/{long}/state": "4: ACTIVE", f"m/ports/1/gid_attrs/ndevs/{long}": "eth0",
             "m/ports/2/state": long + ": ACTIVE", "m/ports/2/rate": long + " Gb/sec",
             "m/ports/3/state": "\u0663: ACTIVE", "m/device/net/eth0/dev_id": long}
    ports = parse_infiniband(texts)
    assert list(ports) == [("m", 1), ("m", 2), ("m", 3)]
    assert ports["m", 1].gid_netdevs == {}
    assert ports["m", 2].state is None and ports["m", 2].rate_gbps is None
    assert ports["m", 3].state is None


# ----------------------------------------------------------------------------- odd trees


def test_missing_tree_reads_as_no_devices(tmp_path):
    assert read_infiniband(str(tmp_path)) == {}
    assert parse_infiniband({}) == {}


@pytest.mark.slow
def test_unreadable_and_huge_entries_are_skipped(tmp_path):
    base = tmp_path / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    (base / "counters").mkdir(parents=True)
    (base / "state").write_text("4: ACTIVE\n")
    (base / "counters" / "symbol_error").write_text("0\n")
    (base / "counters" / "dangling").symlink_to(tmp_path / "nowhere")
    (base / "counters" / "a_directory").mkdir()
    (base / "rate").write_text("x" * 10_000)  # larger than a page: not a sysfs attribute
    huge = base / "hw_counters"
    huge.mkdir()
    for i in range(600):
        (huge / f"c{i}").write_text("1\n")
    texts = read_infiniband(str(tmp_path))
    assert texts == {"mlx5_0/ports/1/state": "4: ACTIVE\n", "mlx5_0/ports/1/counters/symbol_error": "0\n"}


@pytest.mark.slow
def test_gid_tables_are_read_in_index_order_and_bounded(tmp_path):
    base = tmp_path / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "gid_attrs"
    for table in ("types", "ndevs"):
        (base / table).mkdir(parents=True)
        for i in range(255):
            if i < 4:
                (base / table / str(i)).write_text("RoCE v2\n" if table == "types" else "eth0\n")
            else:
                (base / table / str(i)).mkdir()  # stands in for an empty slot (EINVAL on read)
    texts = read_infiniband(str(tmp_path), max_gids=10)
    assert sorted(k for k in texts if "/types/" in k) == [f"mlx5_0/ports/1/gid_attrs/types/{i}" for i in range(4)]


# ----------------------------------------------------------------------------- garbage

_KEYS = st.sampled_from([
    "mlx5_0/ports/1/state", "mlx5_0/ports/1/phys_state", "mlx5_0/ports/1/rate", "mlx5_0/ports/1/link_layer",
    "mlx5_0/ports/1/counters/symbol_error", "mlx5_0/ports/1/counters/port_xmit_data",
    "mlx5_0/ports/2/hw_counters/out_of_sequence", "mlx5_0/ports/1/hw_counters/lifespan",
    "mlx5_0/hw_counters/np_cnp_sent", "mlx5_0/device/net/eth0", "mlx5_0/device/net/eth0/dev_id",
    "mlx5_0/device/net/eth0/dev_port", "mlx5_0/ports/1/gid_attrs/ndevs/0", "mlx5_0/ports/1/gid_attrs/types/x",
    "mlx5_0/ports/x/state", "/", "", "mlx5_0", "mlx5_0/ports", "mlx5_0/ports/1", "class/infiniband/",
    "mlx5_0/ports/1/counters/", "mlx5_0/ports/٣/state",
]) | st.text(max_size=40)
_VALUES = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from(["4: ACTIVE\n", "N/A (no PMA)\n", "0x1\n", "100 Gb/sec (4X EDR)\n", "-1", "99999999999999999999999"]),
    st.integers(min_value=-5, max_value=1 << 70).map(str),
)


def check_port(p: IbPort) -> None:
    for values, bits in ((p.counters, p.counter_bits), (p.hw_counters, p.hw_counter_bits)):
        assert set(values) == set(bits)
        for v in values.values():
            assert v is None or (isinstance(v, int) and 0 <= v < 1 << 64)
        assert set(bits.values()) <= {4, 8, 16, 32, 64}
    assert p.rate_gbps is None or p.rate_gbps >= 0
    assert p.hw_scope in (None, "port", "device")


@pytest.mark.slow
@FUZZ
@given(st.dictionaries(_KEYS, _VALUES, max_size=30))
def test_garbage_texts_never_raise(texts):
    for p in parse_infiniband(texts).values():
        check_port(p)


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_mutated_fixture_texts_never_raise(data):
    texts = dump_texts()
    keys = sorted(texts)
    for key in data.draw(st.lists(st.sampled_from(keys), max_size=20)):
        action = data.draw(st.sampled_from(["drop", "cut", "replace"]))
        if action == "drop":
            texts.pop(key, None)
        elif action == "cut" and texts.get(key):
            texts[key] = texts[key][: data.draw(st.integers(0, len(texts[key])))]
        else:
            texts[key] = data.draw(_VALUES)
    for p in parse_infiniband(texts).values():
        check_port(p)


def test_reader_never_raises_on_entries_it_cannot_read(tmp_path):
    """Unreadable entries, made so that root cannot read them either: a directory that is a
    file, a file that is a dangling link, a sysfs attribute that fails with EINVAL."""
    port = tmp_path / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "counters").write_text("not a directory\n")
    (port / "state").symlink_to(tmp_path / "nowhere")
    einval = "/sys/class/net/lo/speed"  # reading it fails with EINVAL on every Linux
    if os.path.exists(einval):
        (port / "rate").symlink_to(einval)
    (port / "link_layer").write_text("Ethernet\n")
    texts = read_infiniband(str(tmp_path))
    assert texts == {"mlx5_0/ports/1/link_layer": "Ethernet\n"}


@pytest.mark.slow
@FUZZ
@given(st.lists(_KEYS | st.sampled_from([":", "\n", "/sys/class/infiniband/", "4: ACTIVE", "N/A (no PMA)"]),
                max_size=40).map("".join))
def test_garbage_grep_output_never_raises(text):
    for p in parse_infiniband(texts_from_grep(text)).values():
        check_port(p)
