"""Recordings (raw samples as JSON lines) and the ``snapshot --json`` document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netui.collectors.local import TreeReader
from netui.engine.document import fleet_document
from netui.engine.recording.codec import RecordingError, dump_lines, sample_from_dict, sample_to_dict
from netui.engine.recording.playback import load
from netui.model.fleet import Fleet
from netui.model.node import NodeState
from netui.model.samples import INTERFACE_COUNTER_NAMES
from tests.factories import full_sample, make_iface, make_sample
from tests.testdata import PROCFS, data_path


def round_trip(sample):
    return sample_from_dict(json.loads(json.dumps(sample_to_dict(sample))))


# --- round trip --------------------------------------------------------------------------------


def test_a_full_sample_survives_json():
    sample = full_sample(12.5, rx=10**12, retrans=348)

    assert round_trip(sample) == sample


def test_a_partial_sample_survives_json():
    sample = make_sample(3.0, boot_id=None, problems=("stat: not readable", "net/dev: not readable"))

    back = round_trip(sample)

    assert back == sample
    assert back.tcp is None and back.cpu is None and back.softnet is None


def test_a_sample_read_from_the_fixture_tree_survives_json():
    sample = TreeReader(procfs=str(data_path(f"{PROCFS}/proc")), sysfs=str(data_path(f"{PROCFS}/sys"))).sample()

    assert round_trip(sample) == sample


names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=15)
counts = st.integers(0, (1 << 64) - 1)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(names, st.lists(counts, min_size=16, max_size=16), max_size=3),
    st.dictionaries(names, st.integers(-1, 1 << 64), max_size=4),
    st.floats(0, 1e9, allow_nan=False),
    st.one_of(st.none(), names),
)
def test_any_sample_survives_json(ifaces, tcp, mono_s, hostname):
    sample = make_sample(
        mono_s,
        *(make_iface(n, **dict(zip(INTERFACE_COUNTER_NAMES, c))) for n, c in ifaces.items()),
        tcp=tcp or None,
        boot_id=hostname,
    )

    assert round_trip(sample) == sample


# --- recording files ---------------------------------------------------------------------------


def test_a_recording_gives_back_each_nodes_samples_in_order(tmp_path: Path):
    records = [("gpu01", full_sample(0.0, rx=0)), ("gpu02", full_sample(5.0, rx=7)),
               ("gpu01", full_sample(1.0, rx=100)), ("gpu01", full_sample(2.0, rx=300))]
    path = tmp_path / "rec.jsonl"
    path.write_text("".join(dump_lines(records)) + "\n\n")

    loaded = load(str(path)).samples_by_node()

    assert list(loaded) == ["gpu01", "gpu02"]
    assert loaded["gpu01"] == [s for n, s in records if n == "gpu01"]
    assert loaded["gpu02"] == [records[1][1]]


def test_each_recording_line_is_one_json_object(tmp_path: Path):
    lines = list(dump_lines([("gpu01", full_sample(0.0)), ("gpu02", full_sample(1.0))]))

    assert len(lines) == 2 and all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    rec = json.loads(lines[0])
    assert rec["node"] == "gpu01"
    assert rec["sample"]["interfaces"]["eth0"]["counters"]["rx_dropped"] == 3  # raw counters, not rates


@pytest.mark.parametrize(
    "bad_line",
    [
        b"{not json",
        b'{"node": "gpu01"}',  # no sample
        b'["gpu01", {}]',  # not an object
        b'{"node": "gpu01", "sample": {"wall_s": 1, "interfaces": {}}}',  # no mono_s
        b'{"node": "gpu01", "sample": {"wall_s": 1, "mono_s": 2, "boot_id": null,'
        b' "interfaces": {"eth0": {"name": "eth0", "counters": {"rx_bytes": 1}}}}}',  # 15 counters missing
        b'{"node": "gpu01", "sample": \xff\xfe}',  # not UTF-8
    ],
)
def test_a_malformed_line_is_a_recording_error_naming_the_line(tmp_path: Path, bad_line: bytes):
    good = "".join(dump_lines([("gpu01", full_sample(0.0)), ("gpu01", full_sample(1.0))])).encode()
    path = tmp_path / "rec.jsonl"
    path.write_bytes(good + b"\n" + bad_line + b"\n")  # the bad line is line 4

    with pytest.raises(RecordingError, match=rf"rec\.jsonl:4:"):
        load(str(path)).samples_by_node()


def test_sample_from_dict_rejects_a_malformed_record():
    with pytest.raises(RecordingError):
        sample_from_dict({"wall_s": "soon", "mono_s": 1, "interfaces": {}})
    with pytest.raises(RecordingError):
        sample_from_dict({"wall_s": 1, "mono_s": 1, "interfaces": {}, "cpu": {"cpus": [0]}})


# --- the JSON document of `netui snapshot --json` ----------------------------------------------

IFACE_COUNTERS = {"rx_bytes", "tx_bytes", "rx_packets", "tx_packets",
                  "rx_errors", "tx_errors", "rx_dropped", "tx_dropped"}
IFACE_RATES = {"rx_bits_per_s", "tx_bits_per_s", "rx_packets_per_s", "tx_packets_per_s",
               "rx_dropped_per_s", "tx_dropped_per_s", "rx_errors_per_s", "tx_errors_per_s"}


@pytest.fixture
def fleet() -> Fleet:
    fleet = Fleet(["gpu01", "gpu02", "gpu03"])
    fleet["gpu01"].observe(full_sample(10.0, rx=1_000_000, retrans=348))
    fleet["gpu01"].observe(full_sample(12.0, rx=3_000_000, retrans=358))
    fleet["gpu02"].fail(NodeState.DOWN, "connection refused")
    return fleet


def test_document_has_the_promised_node_keys(fleet: Fleet):
    doc = fleet_document(fleet)

    assert [n["name"] for n in doc["nodes"]] == ["gpu01", "gpu02", "gpu03"]
    up, down, connecting = doc["nodes"]
    assert (up["state"], up["error"]) == ("up", "net/netstat: not readable")
    assert (down["state"], down["error"]) == ("down", "connection refused")
    assert down["health"] == {"level": "critical", "reasons": ["down: connection refused"]}
    assert connecting["state"] == "connecting" and connecting["interfaces"] == []
    assert up["health"]["level"] in {"ok", "careful", "warning", "critical"}
    assert isinstance(up["health"]["reasons"], list)


def test_document_interfaces_carry_counters_and_rates(fleet: Fleet):
    up = fleet_document(fleet)["nodes"][0]
    eth0 = next(i for i in up["interfaces"] if i["name"] == "eth0")

    assert (eth0["mtu"], eth0["speed_mbps"], eth0["operstate"]) == (1500, 25_000, "up")
    assert IFACE_COUNTERS <= eth0["counters"].keys()
    assert eth0["counters"]["rx_bytes"] == 3_000_000 and eth0["counters"]["rx_dropped"] == 3
    assert IFACE_RATES <= eth0["rates"].keys()
    # 2 MB over 2 s = 1 MB/s = 8 Mb/s
    assert eth0["rates"]["rx_bits_per_s"] == 8_000_000
    assert eth0["rates"]["tx_bits_per_s"] == 4_000_000
    assert eth0["rates"]["rx_dropped_per_s"] == 0 and eth0["rates"]["tx_errors_per_s"] == 0
    lo = next(i for i in up["interfaces"] if i["name"] == "lo")
    assert lo["speed_mbps"] is None and lo["hidden"] is True and eth0["hidden"] is False


def test_document_tcp_uses_the_kernel_names(fleet: Fleet):
    tcp = fleet_document(fleet)["nodes"][0]["tcp"]

    assert tcp["counters"]["RetransSegs"] == 358 and tcp["counters"]["MaxConn"] == -1
    assert tcp["counters"]["TCPSynRetrans"] == 16
    assert tcp["rates"]["retrans_segs_per_s"] == 5.0
    assert tcp["rates"]["out_segs_per_s"] == 10_000.0 and tcp["rates"]["in_segs_per_s"] == 20_000.0
    assert tcp["rates"]["retrans_ratio"] == pytest.approx(0.0005)  # 10 of 20 000 segments
    assert tcp["rates"]["ext_per_s"] == {"TCPTimeouts": 5.0}


def test_document_cpus_and_softnet(fleet: Fleet):
    up = fleet_document(fleet)["nodes"][0]

    assert [c["cpu"] for c in up["cpus"]] == [0, 1]
    cpu0 = up["cpus"][0]
    assert set(cpu0) >= {"cpu", "softirq_percent", "net_rx_per_s", "net_tx_per_s"}
    assert cpu0["softirq_percent"] == 10.0  # 20M of 200M ticks
    assert cpu0["net_rx_per_s"] == 1_000_000.0 and cpu0["net_tx_per_s"] == 500_000.0
    assert up["softnet"][1] == {"cpu": 1, "processed": 2, "dropped": 0, "time_squeeze": 0xF0000769,
                                "dropped_per_s": 0.0, "time_squeeze_per_s": 0.0}
    assert set(up["softnet"][0]) >= {"cpu", "processed", "dropped", "time_squeeze"}


def test_document_before_any_rate_has_nulls_not_zeros():
    fleet = Fleet(["gpu01"])
    fleet["gpu01"].observe(full_sample(10.0, rx=1_000_000))

    up = fleet_document(fleet)["nodes"][0]

    eth0 = next(i for i in up["interfaces"] if i["name"] == "eth0")
    assert set(eth0["rates"].values()) == {None}
    assert up["tcp"]["rates"]["retrans_ratio"] is None
    assert {c["softirq_percent"] for c in up["cpus"]} == {None}


def test_document_is_plain_json(fleet: Fleet):
    doc = fleet_document(fleet)

    text = json.dumps(doc, allow_nan=False)

    assert json.loads(text) == doc
    assert doc["totals"]["rx_bits_per_s"] == 8_000_000
    assert doc["totals"]["states"] == {"connecting": 1, "up": 1, "down": 1}


def test_a_recorder_says_where_its_file_went_how_long_and_how_big(tmp_path: Path):
    from netui.engine.recorder import Recorder, duration_words

    now = [1_790_000_000.0]
    path = tmp_path / "run.ndjson.gz"
    recorder = Recorder(path, hosts=["n1"], interval_s=1.0, clock=lambda: now[0])
    fleet = Fleet(["n1"])
    for k in range(3):
        recorder.sample("n1", full_sample(float(k)))
        recorder.tick(fleet)
        now[0] += 32.5
    recorder.close()
    now[0] += 100  # after the close: not counted
    size = path.stat().st_size
    assert recorder.size_bytes == size
    assert recorder.summary() == (f"recorded 3 samples in 3 ticks (1 min 38 s, {size} B) to {path}")
    assert [duration_words(s) for s in (0.4, 42, 65, 7384)] == ["0 s", "42 s", "1 min 5 s", "2 h 3 min"]
