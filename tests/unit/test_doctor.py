"""The doctor, pure parts: its probe's parser on captured and synthetic output, and the rules
on facts made here (the probe run by sh: tests/integration/test_node_scripts.py)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netui.checks.doctor.probe import cpu_list, doctor_script, parse_doctor_probe
from netui.checks.doctor.report import doctor_document, summary, text_report
from netui.checks.doctor.runner import DoctorReport
from netui.checks.doctor.rules import (
    DoctorProbe,
    NicQueues,
    NodeFacts,
    RdmaPortState,
    cpu_mask,
    diagnose,
    failed,
    failing_nodes,
    grouped,
)
from netui.checks.doctor.rules_sysctl import SYSCTL_KEYS, size_text, sysctl_command
from netui.model.health import Level
from tests.factories import TUNED, nic, node_facts, problems


# --- the probe ---------------------------------------------------------------------------------


CAPTURED = """\
@sysctl
/proc/sys/net/core/rmem_max:212992
/proc/sys/net/ipv4/tcp_rmem:4096\t131072\t6291456
@cpus
0-127
@irqbalance
no
@rps
/sys/class/net/ens1f0np0/queues/rx-0/rps_cpus:00000000,00000000,00000000,00000000
/sys/class/net/ens1f0np0/queues/rx-1/rps_cpus:00000000,00000000,00000000,00000000
/sys/class/net/eth0/queues/rx-0/rps_cpus:00000000,00000000,00000000,00000001
@irqs
irq ens1f0np0 45
irq ens1f0np0 46
irq ens1f0np0 47
/proc/irq/45/effective_affinity_list:0
/proc/irq/45/smp_affinity_list:0-127
/proc/irq/46/effective_affinity_list:0
/proc/irq/47/smp_affinity_list:0
@rdma
/sys/class/infiniband/mlx5_0/ports/1/state:1: DOWN
/sys/class/infiniband/mlx5_0/ports/1/phys_state:3: Disabled
/sys/class/infiniband/mlx5_0/ports/1/rate:10 Gb/sec (4X SDR)
/sys/class/infiniband/mlx5_0/ports/1/link_layer:Ethernet
netdev /sys/class/infiniband/mlx5_0/device/net/ens1f0np0
@end
"""


def test_the_parser_reads_queues_interrupts_and_steering():
    probe = parse_doctor_probe(CAPTURED)
    assert probe.problems == () and probe.complete
    assert probe.cpus == 128 and probe.irqbalance is False
    assert probe.sysctls == {"net.core.rmem_max": "212992", "net.ipv4.tcp_rmem": "4096 131072 6291456"}
    nic = probe.nics["ens1f0np0"]
    assert nic == NicQueues(2, False, (45, 46, 47), frozenset({0}))  # effective beats configured
    assert probe.nics["eth0"].rps_on and probe.nics["eth0"].irqs == ()
    (port,) = probe.rdma
    assert (port.state, port.phys_state, port.link_layer, port.netdevs) == ("DOWN", "Disabled", "Ethernet",
                                                                           ("ens1f0np0",))


def test_a_cut_off_probe_is_incomplete_and_says_so():
    probe = parse_doctor_probe(CAPTURED.split("@rps")[0])
    assert not probe.complete and probe.problems == ("the probe's output ended early",)
    assert probe.sysctls["net.core.rmem_max"] == "212992"


def test_cpu_lists_and_masks():
    assert cpu_list("0-3,8,10-11") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert cpu_list("3-1") is None and cpu_list("x") is None and cpu_list("") is None
    assert cpu_mask(2) == "3" and cpu_mask(32) == "ffffffff" and cpu_mask(40) == "ff,ffffffff"
    assert cpu_mask(128) == ",".join(["ffffffff"] * 4)


def test_the_script_reads_every_sysctl_the_rules_need():
    script = doctor_script()
    for key in SYSCTL_KEYS:
        assert "/proc/sys/" + key.replace(".", "/") in script


@pytest.mark.slow
@given(st.text(max_size=3000))
def test_the_parser_never_raises(text):
    parse_doctor_probe(text)


@pytest.mark.slow
@given(st.lists(st.sampled_from(CAPTURED.splitlines()), max_size=40))
def test_the_parser_never_raises_on_shuffled_real_lines(lines):
    parse_doctor_probe("\n".join(lines))


# --- the rules ---------------------------------------------------------------------------------


def test_a_tuned_cluster_passes_with_one_ok_per_check():
    findings = diagnose([node_facts(f"gpu0{k}") for k in range(1, 5)])
    assert problems(findings) == []
    assert not failed(findings)
    checks = {f.check for f in findings}
    assert {"examined", "mtu", "link_speed", "link_state", "sysctl", "interface_errors", "irq_spread",
            "rps"} <= checks
    assert "rdma_port" not in checks  # nothing to look at: no ok either
    mtu = next(f for f in findings if f.check == "mtu")
    assert mtu.node is None and mtu.evidence == "MTU 9000 alike on 4 nodes"


def test_one_nodes_mtu_and_anothers_tcp_rmem_are_exactly_the_findings():
    facts = [node_facts("node1"), node_facts("node2", nic(mtu=1400)), node_facts("node3", sysctls={
        "net.ipv4.tcp_rmem": "4096 131072 6291456"}), node_facts("node4")]
    findings = diagnose(facts)
    assert problems(findings) == [
        ("node2", "mtu", "eth0", "critical", "ip link set dev eth0 mtu 9000"),
        ("node3", "sysctl", "net.ipv4.tcp_rmem", "warning", 'sysctl -w net.ipv4.tcp_rmem="4096 131072 134217728"'),
    ]
    assert failing_nodes(findings) == ["node2", "node3"]
    mtu = findings[0]
    assert mtu.evidence.startswith("eth0 MTU 1400; 3 of 4 nodes have MTU 9000")
    rmem = findings[1]
    assert "max 6 MiB (4096 131072 6291456), below 128 MiB" in rmem.evidence
    assert "3 of 4 nodes have 4096 131072 134217728" in rmem.evidence


def test_a_low_tcp_rmem_everywhere_is_fixed_to_the_recommendation_keeping_min_and_default():
    facts = [node_facts(f"n{k}", sysctls={"net.ipv4.tcp_rmem": "8192 87380 6291456"}) for k in range(3)]
    fixes = {f.fix for f in diagnose(facts) if f.subject == "net.ipv4.tcp_rmem"}
    assert fixes == {'sysctl -w net.ipv4.tcp_rmem="8192 87380 134217728"'}


def test_a_sysctl_unlike_its_fine_peers_is_careful_and_matched_to_them():
    facts = [node_facts("a"), node_facts("b"), node_facts("c", sysctls={"net.ipv4.tcp_rmem": "4096 131072 268435456"})]
    assert problems(diagnose(facts)) == [
        ("c", "sysctl", "net.ipv4.tcp_rmem", "careful", 'sysctl -w net.ipv4.tcp_rmem="4096 131072 134217728"')]


def test_a_tie_takes_the_larger_mtu_as_intended():
    facts = [node_facts("a"), node_facts("b"), node_facts("c", nic(mtu=1500)), node_facts("d", nic(mtu=1500))]
    assert [(n, fix) for n, check, _, _, fix in problems(diagnose(facts)) if check == "mtu"] == [
        ("c", "ip link set dev eth0 mtu 9000"), ("d", "ip link set dev eth0 mtu 9000")]


def test_interfaces_are_compared_by_name_and_down_ones_are_left_out_of_mtu_and_speed():
    facts = [node_facts("a", nic("eth0"), nic("ib0", mtu=2044)), node_facts("b", nic("eth0"), nic("ib0", mtu=4092)),
             node_facts("c", nic("eth0"), nic("ib0", mtu=4092)),
             node_facts("d", nic("eth0", mtu=1500, operstate="down", carrier=None), nic("ib0", mtu=4092))]
    assert problems(diagnose(facts)) == [
        ("a", "mtu", "ib0", "critical", "ip link set dev ib0 mtu 4092"),
        ("d", "link_state", "eth0", "warning", "ip link set dev eth0 up"),
    ]


def test_a_slow_link_is_a_warning_and_a_cable_without_carrier_says_where_to_look():
    facts = [node_facts("a"), node_facts("b"), node_facts("c", nic(speed=25_000)), node_facts("d", nic("eth0", carrier=False,
                                                                                     operstate="down"))]
    found = {(f.node, f.check): f for f in diagnose(facts) if f.severity > Level.OK}
    slow = found["c", "link_speed"]
    assert slow.severity == Level.WARNING and slow.fix == "ethtool -r eth0"
    assert slow.evidence.startswith("eth0 at 25 Gb/s; 2 of 3 nodes at 100 Gb/s")
    cable = found["d", "link_state"]
    assert cable.fix is None and cable.look == "ethtool eth0" and "no carrier" in cable.evidence


def test_software_devices_have_no_speed_to_compare():
    facts = [node_facts("a", nic(kind="virtual", speed=10_000)), node_facts("b", nic(kind="virtual", speed=1000))]
    assert not any(f.check == "link_speed" for f in diagnose(facts))


def test_rdma_ports_not_active_or_not_linkup_are_critical_with_a_fix_where_one_exists():
    roce = RdmaPortState("mlx5_0", 1, "DOWN", "Disabled", "100 Gb/sec (4X EDR)", "Ethernet", ("ens1f0np0",))
    ib_init = RdmaPortState("mlx5_1", 1, "INIT", "LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand")
    ib_polling = RdmaPortState("mlx5_2", 1, "DOWN", "Polling", "10 Gb/sec (4X SDR)", "InfiniBand")
    good = RdmaPortState("mlx5_3", 1, "ACTIVE", "LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand")
    found = [f for f in diagnose([node_facts("a", rdma=[roce, ib_init, ib_polling, good])]) if f.check == "rdma_port"]
    assert [(f.subject, f.severity, f.fix, f.look) for f in found] == [
        ("mlx5_0 port 1", Level.CRITICAL, "ip link set dev ens1f0np0 up", None),
        ("mlx5_1 port 1", Level.CRITICAL, None, "sminfo -C mlx5_1 -P 1"),
        ("mlx5_2 port 1", Level.CRITICAL, None, "ibstat mlx5_2 1"),
    ]
    assert "no subnet manager" in found[1].evidence
    # a RoCE port whose netdev is up but has no carrier: no command brings it up
    cable = node_facts("b", nic("ens1f0np0", carrier=False, operstate="down"), rdma=[roce])
    (f,) = [f for f in diagnose([cable]) if f.check == "rdma_port"]
    assert (f.fix, f.look) == (None, "ethtool ens1f0np0") and "no carrier" in f.evidence


def test_an_rdma_port_that_trained_to_a_lower_rate_is_a_warning():
    fast = RdmaPortState("mlx5_0", 1, "ACTIVE", "LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand")
    slow = RdmaPortState("mlx5_0", 1, "ACTIVE", "LinkUp", "50 Gb/sec (1X HDR)", "InfiniBand")
    found = problems(diagnose([node_facts("a", rdma=[fast]), node_facts("b", rdma=[fast]), node_facts("c", rdma=[slow])]))
    assert found == [("c", "rdma_rate", "mlx5_0 port 1", "warning", None)]


def test_interface_errors_since_boot_are_careful_and_rising_ones_a_warning():
    facts = [node_facts("a", nic(rx_errors=12, rx_frame=12), errors_per_s={"eth0": 0.0}),
             node_facts("b", nic(tx_errors=3), errors_per_s={"eth0": 1.5}), node_facts("c")]
    found = {f.node: f for f in diagnose(facts) if f.check == "interface_errors"}
    assert found["a"].severity == Level.CAREFUL and found["b"].severity == Level.WARNING
    assert found["a"].evidence.startswith("eth0: 12 RX errors (frame 12, fifo 0) and 0 TX errors since boot")
    assert "rising now, 1.5/s" in found["b"].evidence
    assert found["a"].fix is None and found["a"].look.startswith("ethtool -S eth0")


def test_irq_and_rps_hints_only_for_real_nics_on_several_cpus():
    one_cpu = NicQueues(8, False, tuple(range(8)), frozenset({0}))
    single_queue = NicQueues(1, False, (), frozenset())
    facts = [node_facts("a", nics={"eth0": one_cpu}, irqbalance=False),
             node_facts("b", nics={"eth0": single_queue}, cpus=40),
             node_facts("c", nic(kind="virtual"), nics={"eth0": single_queue}),  # a veth: no hint
             node_facts("d", nics={"eth0": single_queue}, cpus=1)]  # one CPU: nothing to spread over
    assert problems(diagnose(facts)) == [
        ("a", "irq_spread", "eth0", "careful", "systemctl start irqbalance"),
        ("b", "rps", "eth0", "careful", "echo ff,ffffffff > /sys/class/net/eth0/queues/rx-0/rps_cpus"),
    ]


def test_congestion_control_and_the_other_sysctls():
    facts = [node_facts("a", sysctls={"net.ipv4.tcp_congestion_control": "cubic"}),
             node_facts("b", sysctls={"net.ipv4.tcp_congestion_control": "reno",
                                "net.ipv4.tcp_available_congestion_control": "reno cubic"}),
             node_facts("c", sysctls={"net.ipv4.tcp_slow_start_after_idle": "1", "net.ipv4.tcp_notsent_lowat": "4294967295",
                                "net.ipv4.ip_local_port_range": "50000 51000", "net.core.wmem_max": "212992"})]
    found = {(n, s): (level, fix) for n, _, s, level, fix in problems(diagnose(facts))}
    assert found == {
        ("a", "net.ipv4.tcp_congestion_control"): ("careful", "sysctl -w net.ipv4.tcp_congestion_control=bbr"),
        ("b", "net.ipv4.tcp_congestion_control"):
            ("warning", "modprobe tcp_bbr && sysctl -w net.ipv4.tcp_congestion_control=bbr"),
        ("c", "net.ipv4.tcp_slow_start_after_idle"): ("warning", "sysctl -w net.ipv4.tcp_slow_start_after_idle=0"),
        ("c", "net.ipv4.tcp_notsent_lowat"): ("careful", "sysctl -w net.ipv4.tcp_notsent_lowat=131072"),
        ("c", "net.ipv4.ip_local_port_range"): ("careful", 'sysctl -w net.ipv4.ip_local_port_range="32768 60999"'),
        ("c", "net.core.wmem_max"): ("warning", "sysctl -w net.core.wmem_max=134217728"),
    }


def test_nodes_that_could_not_be_examined():
    """A node down is not examined: its own line, never a finding at a level (it is not
    "critical"; nothing is known about it); one read only for its interfaces, or whose probe
    was cut short, is a finding."""
    from netui.checks.doctor.rules import not_examined

    facts = [node_facts("a"), NodeFacts("b", unreachable="b is down (connection refused)"),
             NodeFacts("c", node_facts("c").interfaces, no_commands="a replay"),
             NodeFacts("d", node_facts("d").interfaces, probe=DoctorProbe(complete=False, problems=("timed out",))),
             NodeFacts("e", unreachable="e is down (connection refused)")]
    findings = diagnose(facts)
    found = {f.node: f for f in findings if f.check == "examined"}
    assert set(found) == {"c", "d"} and (found["c"].severity, found["d"].severity) == (Level.CAREFUL, Level.WARNING)
    assert "interfaces only" in found["c"].evidence
    assert not any(f.node in ("b", "e") for f in findings)
    assert not any(f.check == "examined" and f.severity == Level.OK for f in findings)  # not "every node examined"
    assert not_examined(facts) == [(["b", "e"], "b,e is down (connection refused)")]
    report = DoctorReport(["a", "b", "c", "d", "e"], findings=findings, facts={f.name: f for f in facts})
    assert report.failed and report.not_examined == {"b": "b is down (connection refused)",
                                                     "e": "e is down (connection refused)"}
    words = summary(report)
    assert words.endswith(" · not examined: b,e"), words
    assert "critical" not in words and "failing: d" in words
    assert doctor_document(report)["not_examined"] == report.not_examined
    text = text_report(report)
    assert "CRITICAL" not in text and text.splitlines()[2] == (
        "not examined: b,e is down (connection refused) · look: ssh b true"), text
    # the replay's interfaces are still compared
    assert not any(f.check == "mtu" and f.severity > Level.OK for f in diagnose(facts))


def test_words_and_commands():
    assert size_text(134217728) == "128 MiB" and size_text(212992) == "208 KiB" and size_text(100) == "100 B"
    assert sysctl_command("net.ipv4.tcp_rmem", "4096\t131072\t134217728") == \
        'sysctl -w net.ipv4.tcp_rmem="4096 131072 134217728"'
    assert sysctl_command("net.core.rmem_max", "134217728") == "sysctl -w net.core.rmem_max=134217728"


def test_the_document_and_the_text_name_the_mistuned_nodes():
    facts = [node_facts("node1"), node_facts("node2", nic(mtu=1400)), node_facts("node3", sysctls={
        "net.ipv4.tcp_rmem": "4096 131072 6291456"}), node_facts("node4")]
    report = DoctorReport([f.name for f in facts], diagnose(facts), {f.name: f for f in facts}, 1.0, 0.25)
    doc = json.loads(json.dumps(doctor_document(report)))
    assert doc["kind"] == "doctor" and doc["failed"] is True
    assert doc["failing_nodes"] == ["node2", "node3"]
    assert doc["counts"]["critical"] == 1 and doc["counts"]["warning"] == 1
    first = doc["findings"][0]
    assert first == {"check": "mtu", "severity": "critical", "node": "node2", "subject": "eth0",
                     "evidence": first["evidence"], "fix": "ip link set dev eth0 mtu 9000", "look": None}
    assert doc["facts"]["node3"]["sysctls"]["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    assert doc["facts"]["node2"]["interfaces"]["eth0"]["mtu"] == 1400
    text = text_report(report)
    assert "fix: ip link set dev eth0 mtu 9000" in text
    assert 'fix: sysctl -w net.ipv4.tcp_rmem="4096 131072 134217728"' in text
    assert summary(report) == "4 nodes: 1 critical, 1 warning · failing: node[2-3] (critical: node2)"


def test_alike_findings_are_one_line_with_a_range_of_nodes():
    facts = [node_facts(f"gpu{k:03d}", sysctls={"net.ipv4.tcp_slow_start_after_idle": "1"}) for k in range(1, 129)]
    facts[6] = node_facts("gpu007", nic(mtu=1500), sysctls={"net.ipv4.tcp_slow_start_after_idle": "1"})
    findings = diagnose(facts)
    groups = [(f.check, nodes) for f, nodes in grouped(findings) if f.severity > Level.OK]
    assert groups == [("mtu", ["gpu007"]), ("sysctl", [f.name for f in facts])]
    report = DoctorReport([f.name for f in facts], findings, {f.name: f for f in facts}, 1.0, 0.5)
    text = text_report(report)
    assert "WARNING  gpu[001-128]  sysctl           net.ipv4.tcp_slow_start_after_idle: 1" in text
    assert text.count("tcp_slow_start_after_idle") == 2  # the finding and its fix, once
    # counted as the report shows them: the sysctl alike on 128 nodes is one line
    assert summary(report) == "128 nodes: 1 critical, 1 warning · failing: gpu[001-128] (critical: gpu007)"
    assert doctor_document(report)["failing_nodes"] == [f.name for f in facts]


# --- the runner, over scripted nodes and canned probes run by sh on this host ------------------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sh") is None or shutil.which("timeout") is None, reason="needs sh and timeout")
async def test_examine_judges_canned_probes_and_says_why_a_node_was_not_examined():
    import shlex

    from netui.checks.doctor.runner import examine
    from netui.engine.monitor import Monitor
    from netui.collectors.shell import LocalShell
    from netui.engine.sources import SourceError
    from netui.model.node import NodeState
    from tests.synth import ScriptedSource, node_sample

    def down(i):
        return SourceError(NodeState.DOWN, "connection refused")

    names = ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    sources = [ScriptedSource(n, lambda i: node_sample(i)) for n in names[:4]] + [ScriptedSource("gpu05", down)]
    monitor = Monitor(sources, interval_s=1.0, history_s=60)
    for _ in range(2):
        await monitor.tick()
    tuned = "@sysctl\n" + "".join(f"/proc/sys/{k.replace('.', '/')}:{v}\n" for k, v in TUNED.items()) + "@end\n"
    small = tuned.replace("4096 131072 134217728", "4096 131072 6291456")
    shells = {
        "gpu01": (LocalShell("gpu01"), "printf %s " + shlex.quote(tuned)),
        "gpu02": (LocalShell("gpu02"), "printf %s " + shlex.quote(small)),
        "gpu03": (LocalShell("gpu03"), "sleep 30"),  # never answers in time
        # gpu04: no shell (a replay)
    }
    report = await examine(monitor, shells=shells, timeout_s=1)
    assert report.elapsed_s < 5
    found = {(f.node, f.check, f.subject): f for f in report.problems}
    assert set(found) == {("gpu02", "sysctl", "net.ipv4.tcp_rmem"), ("gpu04", "examined", "")}
    assert found["gpu04", "examined", ""].severity == Level.CAREFUL
    # not examined: no finding, at no level, but the run is not a clean bill
    assert report.not_examined.keys() == {"gpu03", "gpu05"}
    assert report.not_examined["gpu03"] == "the probe timed out after 1 s"
    # when it failed and what: no retry countdown in words written once
    assert re.fullmatch(r"gpu05 is down \(failed at \d\d:\d\d:\d\d: connection refused\)",
                        report.not_examined["gpu05"])
    assert failing_nodes(report.findings, report.nodes) == ["gpu02"] and report.failed
