"""The doctor's look at how interfaces are set up: tc's qdiscs, ethtool's offloads and
rings (parsers on real output captured in tests/data/doctor/, see SOURCES.md there; the
probe run by sh is in tests/integration/test_node_scripts.py), the rules, the buffer advice for a node's own link and RTT,
and the summary's count of what the user sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netui.checks.doctor.probe import parse_doctor_probe
from netui.checks.doctor.parse_nic import parse_ethtool_features, parse_ethtool_ring, parse_tc_qdiscs
from netui.collectors.procfs import ParseError
from netui.checks.doctor.report import doctor_document, summary, text_report
from netui.checks.doctor.runner import DoctorReport, latency_rtt_ms
from netui.checks.doctor.rules import DoctorProbe, NodeFacts, buffer_path, diagnose, failing_nodes, rtt_by_node
from netui.checks.doctor.rules_nic import NOT_SUPPORTED, NicSettings, Qdisc, RingSizes
from netui.model.health import Level
from netui.checks.latency.model import LatencyResult
from tests.factories import LO, TUNED, nic, problems

DATA = Path(__file__).parent.parent / "data" / "doctor"


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- the parsers, on real output ------------------------------------------------------------


def test_tc_json_of_a_tbf_and_of_an_htb_with_a_tbf_class():
    (lo, tbf) = parse_tc_qdiscs(read("tc-qdisc_tbf.json"))
    assert lo.kind == "noqueue" and lo.parent is None
    assert tbf == Qdisc("tbf", "1:", None, rate_bytes_per_s=12_500_000, burst_bytes=65512, latency_us=50001)
    _, htb, child = parse_tc_qdiscs(read("tc-qdisc_htb_tbf.json"))
    assert (htb.kind, htb.parent, htb.rate_bytes_per_s) == ("htb", None, None)
    assert (child.kind, child.parent, child.rate_bytes_per_s) == ("tbf", "1:10", 5_000_000_000)  # 40 Gb/s
    # `tc -j qdisc show dev eth0` leaves the "dev" key out: the interface is the probe's
    assert parse_tc_qdiscs(read("tc-qdisc_dev_tbf.json")) == (tbf,)
    assert [q.kind for q in parse_tc_qdiscs(read("tc-qdisc_default_veth.json"))] == ["noqueue", "noqueue"]


def test_tc_json_that_is_cut_off_or_not_qdiscs_is_a_parse_error():
    text = read("tc-qdisc_htb_tbf.json")
    for bad in (text[: len(text) // 2], "", "{}", '[{"handle": "1:"}]', "[1, 2]", "Cannot find device"):
        with pytest.raises(ParseError):
            parse_tc_qdiscs(bad)


def test_netem_in_the_format_of_iproute2s_q_netem():
    # written by hand (this kernel has no netem): keys and units as q_netem.c prints them
    text = json.dumps([{"kind": "netem", "handle": "8001:", "root": True, "refcnt": 2, "options": {
        "limit": 1000, "delay": {"delay": 0.01, "jitter": 0, "correlation": 0},
        "loss-random": {"loss": 0.01, "correlation": 0}, "ecn": False, "gap": 0}}])
    (q,) = parse_tc_qdiscs(text)
    assert (q.kind, q.delay_s, q.loss) == ("netem", 0.01, 0.01)


def test_ethtool_features_of_a_veth_and_of_a_virtio_nic():
    veth = parse_ethtool_features(read("ethtool-k_veth.txt"))
    assert veth["generic-receive-offload"] == (False, False)  # a veth's default
    assert veth["tcp-segmentation-offload"] == (True, False)
    assert veth["large-receive-offload"] == (False, True)  # "[fixed]"
    assert veth["tx-checksum-ipv4"] == (False, True)  # the indented sub-features too
    changed = parse_ethtool_features(read("ethtool-k_veth_tso_off_gro_on.txt"))
    assert changed["tcp-segmentation-offload"] == (False, False)
    assert changed["generic-receive-offload"] == (True, False)
    virtio = parse_ethtool_features(read("ethtool-k_virtio.txt"))
    assert virtio["generic-receive-offload"] == (True, False) and virtio["rx-checksumming"] == (True, True)
    with pytest.raises(ParseError):
        parse_ethtool_features(read("ethtool-g_veth.txt"))


def test_ethtool_rings():
    assert parse_ethtool_ring(read("ethtool-g_virtio.txt")) == RingSizes(256, 256, 256, 256)
    small = read("ethtool-g_virtio.txt").replace("RX:\t\t256\nRX Mini", "RX:\t\t8192\nRX Mini", 1)
    small = small.replace("Current hardware settings:\nRX:\t\t256", "Current hardware settings:\nRX:\t\t512")
    assert parse_ethtool_ring(small) == RingSizes(512, 8192, 256, 256)
    for bad in (read("ethtool-g_veth.txt"), read("ethtool-g_virtio.txt").split("Current")[0], ""):
        with pytest.raises(ParseError):
            parse_ethtool_ring(bad)


def probe_text(*blocks: str, tools: str = "tc yes\nethtool yes") -> str:
    return "@sysctl\n@tools\n" + tools + "\n" + "".join(blocks) + "@end\n"


def block(section: str, name: str, text: str, status: int | None = 0) -> str:
    return f"@{section} {name}\n{text.rstrip()}\n" + ("" if status is None else f"@exit {status}\n")


def test_the_probe_parser_reads_each_interfaces_blocks():
    text = probe_text(block("qdisc", "eth0", read("tc-qdisc_dev_tbf.json")),
                      block("features", "eth0", read("ethtool-k_veth.txt")),
                      block("ring", "eth0", read("ethtool-g_veth.txt"), status=1))
    probe = parse_doctor_probe(text)
    assert probe.complete and probe.problems == ()
    assert probe.tc is True and probe.ethtool is True
    s = probe.nic_settings["eth0"]
    assert [q.kind for q in s.qdiscs] == ["tbf"] and s.qdisc_problem is None
    assert s.features["generic-receive-offload"] == (False, False)
    assert s.ring is None and s.ring_problem == NOT_SUPPORTED  # a veth has no rings: not a problem


def test_truncated_or_failed_blocks_say_why_they_could_not_be_read():
    cut = read("tc-qdisc_htb_tbf.json")[:100]
    probe = parse_doctor_probe(probe_text(block("qdisc", "eth0", cut),
                                          block("qdisc", "eth1", 'Cannot find device "eth1"', status=1)))
    assert probe.nic_settings["eth0"].qdiscs is None
    assert probe.nic_settings["eth0"].qdisc_problem.startswith("unreadable output: not JSON")
    assert probe.nic_settings["eth1"].qdisc_problem == 'Cannot find device "eth1"'
    # the probe's output ends inside a block: no exit status
    probe = parse_doctor_probe("@tools\ntc yes\n" + block("qdisc", "eth0", cut, status=None))
    assert not probe.complete and probe.nic_settings["eth0"].qdisc_problem == "its output ended early"
    # … and the doctor says so, as a careful finding, without a traceback
    facts = [NodeFacts("n1", {"eth0": nic(), "lo": LO}, probe=DoctorProbe(
        sysctls=dict(TUNED), complete=True, tc=True, nic_settings=probe.nic_settings))]
    (found,) = [f for f in diagnose(facts) if f.check == "traffic_shaping"]
    assert found.severity == Level.CAREFUL and found.look == "tc qdisc show dev eth0"
    assert "could not read tc's qdiscs (its output ended early)" in found.evidence


def test_each_rule_says_which_part_it_could_not_read_and_passes_over_what_a_device_lacks():
    from netui.checks.doctor.rules_nic import offloads, rings, shaping

    dataplane = {"eth0": nic("eth0"), "eth1": nic("eth1"), "veth0": nic("veth0", kind="veth")}
    unread = NicSettings(qdisc_problem="its output ended early", features_problem="exit status 1",
                         ring_problem="unreadable output: no maximums")
    lacking = NicSettings(qdisc_problem=NOT_SUPPORTED, features_problem=NOT_SUPPORTED, ring_problem=NOT_SUPPORTED)
    settings = {"eth0": unread, "eth1": lacking, "veth0": unread}
    said = {rule.__name__: [(f.check, f.severity, f.subject, f.evidence, f.look)
                            for f in rule("n1", dataplane, settings)] for rule in (shaping, offloads, rings)}
    assert said == {
        # tc counts software devices too; ethtool's offloads and rings only NICs
        "shaping": [("traffic_shaping", Level.CAREFUL, name,
                     f"{name}: could not read tc's qdiscs (its output ended early): shaping not checked",
                     f"tc qdisc show dev {name}") for name in ("eth0", "veth0")],
        "offloads": [("offloads", Level.CAREFUL, "eth0",
                      "eth0: could not read ethtool -k (exit status 1): offloads not checked", "ethtool -k eth0")],
        "rings": [("rings", Level.CAREFUL, "eth0",
                   "eth0: could not read ethtool -g (unreadable output: no maximums): rings not checked",
                   "ethtool -g eth0")],
    }


@pytest.mark.slow
@given(st.lists(st.sampled_from(
    ["@qdisc eth0", "@features eth0", "@ring eth0", "@exit 0", "@exit 1", "@exit x", "@tools", "tc yes", "@end",
     *read("tc-qdisc_htb_tbf.json")[:60].split(","), *read("ethtool-k_veth.txt").splitlines()[:8],
     *read("ethtool-g_virtio.txt").splitlines()]), max_size=40))
def test_the_probe_parser_never_raises_on_shuffled_blocks(lines):
    parse_doctor_probe("\n".join(lines))


# --- the probe, run for real -------------------------------------------------------------------


# --- the rules ---------------------------------------------------------------------------------


def nic_node(name, *ifaces, settings=None, tc=True, ethtool=True, sysctls=None, rtt_ms=None):
    interfaces = {i.name: i for i in (*ifaces, LO)} if ifaces else {"eth0": nic(), "lo": LO}
    probe = DoctorProbe(sysctls=TUNED | (sysctls or {}), cpus=8, irqbalance=True, complete=True,
                        nic_settings=settings or {}, tc=tc, ethtool=ethtool)
    return NodeFacts(name, interfaces, probe=probe, rtt_ms=rtt_ms)


DEFAULT = NicSettings(qdiscs=parse_tc_qdiscs(read("tc-qdisc_default_veth.json"))[1:],
                      features=parse_ethtool_features(read("ethtool-k_virtio.txt")),
                      ring=RingSizes(1024, 8192, 1024, 8192))  # mlx5's defaults: 1/8 of the maximum


def test_a_tbf_on_one_node_of_four_is_named_on_that_node_only():
    shaped = NicSettings(qdiscs=parse_tc_qdiscs(read("tc-qdisc_dev_tbf.json")), features=DEFAULT.features,
                         ring=DEFAULT.ring)
    facts = [nic_node(f"acc{k}", settings={"eth0": shaped if k == 3 else DEFAULT}) for k in range(1, 5)]
    findings = diagnose(facts)
    assert problems(findings) == [("acc3", "traffic_shaping", "eth0", "warning", "tc qdisc del dev eth0 root")]
    (f,) = [f for f in findings if f.check == "traffic_shaping"]
    assert f.evidence == ("eth0: tbf at the root caps what eth0 sends at 100 Mb/s (burst 64.0 KiB, latency "
                          "50 ms) — the link is 100 Gb/s")
    assert failing_nodes(findings) == ["acc3"]


def test_htb_is_careful_and_a_tbf_under_it_a_warning_netem_too():
    htb = NicSettings(qdiscs=parse_tc_qdiscs(read("tc-qdisc_htb_tbf.json"))[1:2])
    both = NicSettings(qdiscs=parse_tc_qdiscs(read("tc-qdisc_htb_tbf.json"))[1:])
    netem = NicSettings(qdiscs=(Qdisc("netem", "8001:", None, delay_s=0.01, loss=0.01),))
    facts = [nic_node("a", settings={"eth0": htb}), nic_node("b", settings={"eth0": both}),
             nic_node("c", settings={"eth0": netem}), nic_node("d")]
    found = {f.node: f for f in diagnose(facts) if f.check == "traffic_shaping"}
    assert found["a"].severity == Level.CAREFUL and found["a"].fix is None
    assert found["a"].look == "tc -s class show dev eth0"
    assert found["b"].severity == Level.WARNING and "tbf under 1:10 caps the traffic of class 1:10 at 40 Gb/s" \
        in found["b"].evidence
    assert found["c"].severity == Level.WARNING and "delay 10 ms loss 1 %" in found["c"].evidence
    assert "d" not in found


def test_shaping_off_the_data_plane_is_not_reported_and_no_tc_is_said():
    shaped = NicSettings(qdiscs=parse_tc_qdiscs(read("tc-qdisc_dev_tbf.json")))
    docker = nic("docker0", kind="bridge")  # hidden: not the data plane of a node that has eth0
    facts = [nic_node("a", nic(), docker, settings={"docker0": shaped, "eth0": DEFAULT}),
             nic_node("b", settings={"eth0": DEFAULT}), nic_node("c", tc=False, ethtool=False)]
    findings = diagnose(facts)
    assert problems(findings) == []
    ok = {f.check: f.evidence for f in findings if f.severity == Level.OK}
    assert ok["traffic_shaping"] == "on 2 nodes; not checked on 1 node (no tc)"
    assert ok["offloads"] == "on 2 nodes; not checked on 1 node (no ethtool)"


def test_offloads_off_on_a_nic_but_not_on_a_veth_nor_fixed_ones():
    tso_off = NicSettings(features=parse_ethtool_features(read("ethtool-k_veth_tso_off_gro_on.txt")))
    gro_off = NicSettings(features=parse_ethtool_features(read("ethtool-k_veth.txt")))
    facts = [nic_node("a", settings={"eth0": tso_off}), nic_node("b", settings={"eth0": gro_off}),
             nic_node("c", nic(kind="virtual"), settings={"eth0": gro_off}),  # a veth: GRO off is its default
             nic_node("d", settings={"eth0": DEFAULT})]
    assert [(n, check, fix) for n, check, _, _, fix in problems(diagnose(facts))] == [
        ("a", "offloads", "ethtool -K eth0 tso on"), ("b", "offloads", "ethtool -K eth0 gro on")]
    fixed = NicSettings(features={"generic-receive-offload": (False, True), "tcp-segmentation-offload": (False, True)})
    assert problems(diagnose([nic_node("e", settings={"eth0": fixed})])) == []


def test_rings_far_below_their_maximum_are_careful_the_drivers_defaults_are_not():
    small = NicSettings(ring=RingSizes(512, 8192, 1024, 8192))  # a quarter of mlx5's default
    veth = NicSettings(ring_problem=NOT_SUPPORTED)
    facts = [nic_node("a", settings={"eth0": small}), nic_node("b", settings={"eth0": DEFAULT}),
             nic_node("c", settings={"eth0": NicSettings(ring=RingSizes(512, 4096, 512, 4096))}),  # ixgbe's
             nic_node("d", settings={"eth0": veth})]
    found = [f for f in diagnose(facts) if f.check == "rings" and f.severity > Level.OK]
    assert [(f.node, f.severity, f.fix) for f in found] == [("a", Level.CAREFUL, "ethtool -G eth0 rx 8192")]
    assert found[0].evidence.startswith("eth0: RX ring 512 of a possible 8192 — below 1/8 of the maximum")


# --- buffers for the node's own link and round trip ------------------------------------------


SMALL_RMEM = {"net.ipv4.tcp_rmem": "4096 131072 6291456"}  # max 6 MiB


def rmem(findings):
    return next(f for f in findings if f.subject == "net.ipv4.tcp_rmem" and f.node)


def test_buffer_advice_uses_the_nodes_link_speed():
    slow = nic_node("a", nic(speed=25_000), sysctls=SMALL_RMEM)
    fast = nic_node("b", nic(speed=100_000), sysctls=SMALL_RMEM)
    at25, at100 = rmem(diagnose([slow])), rmem(diagnose([fast]))
    # 6 MiB: enough for 25 Gb/s over the assumed 1 ms (3 MiB), not for 100 Gb/s (11.9 MiB)
    assert at25.severity == Level.CAREFUL and at100.severity == Level.WARNING
    assert "one flow fills eth0's 25 Gb/s only up to a 2 ms round trip; a 1 ms round trip (assumed: no " \
           "latency test measured one) needs 3.0 MiB: enough here, not for longer ones" in at25.evidence
    assert "eth0's 100 Gb/s only up to a 0.5 ms round trip" in at100.evidence
    assert at25.fix == at100.fix == 'sysctl -w net.ipv4.tcp_rmem="4096 131072 134217728"'
    # a veth has no real speed: the reference 100 Gb/s, said to be assumed
    veth = rmem(diagnose([nic_node("c", nic(kind="virtual", speed=10_000), sysctls=SMALL_RMEM)]))
    assert "fills 100 Gb/s (no link speed known) only up to" in veth.evidence


def test_buffer_advice_uses_the_rtt_the_latency_test_measured():
    far = nic_node("a", nic(speed=25_000), sysctls=SMALL_RMEM, rtt_ms=5.0)
    found = rmem(diagnose([far]))
    assert found.severity == Level.WARNING  # 25 Gb/s × 5 ms = 14.9 MiB > 6 MiB
    assert "the 5 ms round trip of the latency test's slowest pair needs 14.9 MiB" in found.evidence
    assert buffer_path(far).rtt_ms == 5.0 and buffer_path(far).link_gbps == 25.0


def test_the_rtt_is_the_latency_tests_slowest_pair_for_every_node_in_it():
    from netui.checks.latency.report import report_document
    from netui.checks.latency.runner import LatencyReport
    from netui.checks.latency.tools import LatencySettings

    results = [LatencyResult("a", "b", "fping", True, 20, 20, 0.0, 0.05, 0.04, rtt_p99_ms=0.09),
               LatencyResult("a", "c", "fping", True, 20, 20, 0.0, 3.1, 3.0),
               LatencyResult("b", "c", "fping", False, error="no route")]
    assert rtt_by_node(results) == {"a": 3.0, "b": 3.0, "c": 3.0}  # one RTT: one line for a fleet-wide default
    assert rtt_by_node(results[2:]) == {}
    doc = json.loads(json.dumps(report_document(LatencyReport(LatencySettings(), ["a", "b", "c"], True,
                                                              results=results))))
    assert latency_rtt_ms(doc) == {"a": 3.0, "b": 3.0, "c": 3.0}
    assert latency_rtt_ms(None) == {} and latency_rtt_ms({"kind": "something else"}) == {}


# --- what the user sees counted ------------------------------------------------------------


def test_the_summary_counts_lines_as_shown_and_names_the_failing_nodes():
    """The issue's case: one critical on one node and five sysctls mistuned alike on four
    nodes is 1 critical and 5 warnings (not 20), failing on all four, the critical one named."""
    low = {"net.core.rmem_max": "4194304", "net.core.wmem_max": "4194304",
           "net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304",
           "net.ipv4.tcp_slow_start_after_idle": "1"}
    facts = [nic_node(f"acc{k}", nic(mtu=1500 if k == 2 else 9000), sysctls=low, settings={"eth0": DEFAULT})
             for k in range(1, 5)]
    report = DoctorReport([f.name for f in facts], diagnose(facts), {f.name: f for f in facts}, 1.0, 0.5)
    assert report.counts() | {"ok": 0} == {"critical": 1, "warning": 20, "ok": 0}  # the document's: one per node
    assert report.line_counts() | {"ok": 0} == {"critical": 1, "warning": 5, "ok": 0}
    assert summary(report) == "4 nodes: 1 critical, 5 warnings · failing: acc[1-4] (critical: acc2)"
    assert text_report(report).splitlines()[0].startswith("netui doctor · 4 nodes: 1 critical, 5 warnings · ")
    doc = doctor_document(report)
    assert doc["line_counts"]["warning"] == 5 and doc["failing_nodes"] == [f.name for f in facts]
    assert doc["facts"]["acc1"]["nic_settings"]["eth0"]["ring"] == {"rx": 1024, "rx_max": 8192, "tx": 1024,
                                                                    "tx_max": 8192}


def test_a_cap_the_fleet_shares_is_careful_and_the_node_capped_below_it_the_warning():
    """Every node's eth0 capped at 1 Gb/s by a root tbf but acc3's, at 150 Mb/s: the
    shared cap is the fleet's own set-up (careful, one line), acc3 is the news (a warning,
    said against the others)."""
    def cap(bytes_per_s):
        return NicSettings(qdiscs=(Qdisc("tbf", "1:", None, rate_bytes_per_s=bytes_per_s, burst_bytes=65512),),
                           features=DEFAULT.features, ring=DEFAULT.ring)

    facts = [nic_node(f"acc{k}", settings={"eth0": cap(18_750_000 if k == 3 else 125_000_000)}) for k in range(1, 6)]
    findings = diagnose(facts)
    assert failing_nodes(findings) == ["acc3"]
    (odd,) = [f for f in findings if f.node == "acc3"]
    assert odd.severity == Level.WARNING and odd.fix == "tc qdisc del dev eth0 root"
    assert odd.evidence.startswith("eth0: tbf at the root caps what eth0 sends at 150 Mb/s")
    assert odd.evidence.endswith("; 6.67× below the 1 Gb/s cap of 4 of the 5 nodes")
    shared = [f for f in findings if f.check == "traffic_shaping" and f.node != "acc3"]
    assert len(shared) == 4 and all(f.severity == Level.CAREFUL for f in shared)
    assert shared[0].evidence.endswith("the same cap as on 4 of 5 nodes: the fleet's own shaping, not one node's")
    report = DoctorReport([f.name for f in facts], findings=findings)
    assert summary(report) == "5 nodes: 1 warning, 1 careful · failing: acc3"
    # two nodes of five capped alike are no fleet's cap: both stay warnings
    facts = [nic_node(f"acc{k}", settings={"eth0": cap(125_000_000) if k < 3 else DEFAULT}) for k in range(1, 6)]
    assert failing_nodes(diagnose(facts)) == ["acc1", "acc2"]
