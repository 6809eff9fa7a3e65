"""node_exporter series → NodeSample, on real scrapes of Debian's prometheus-node-exporter 1.5.0
(tests/data/node_exporter/SOURCES.txt), and the Prometheus API answers of a real server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netui.collectors.exposition import (
    ExpositionError,
    keep_lines,
    node_time_s,
    parse_exposition,
    sample_from_series,
)
from netui.collectors.node_exporter import NodeClock, scrape_to_sample, ScrapeFailure
from netui.collectors.prometheus import (
    by_instance,
    fleet_query,
    instance_matcher,
    match_instances,
    matching_names,
    names_for_instances,
    parse_vector,
    PrometheusError,
)
from netui.model.node import Node, NodeState

DATA = Path(__file__).parents[1] / "data" / "node_exporter"
LAB = (DATA / "lab-node2-full.prom").read_text()
VM = (DATA / "vm-host-full.prom").read_text()


def lab_sample():
    series = parse_exposition(LAB)
    return sample_from_series(series, wall_s=node_time_s(series), mono_s=node_time_s(series))


def test_lab_node_interfaces_map_from_the_real_scrape():
    s = lab_sample()
    # Debian's node_exporter leaves lo out of netdev (--collector.netdev.device-exclude=^lo$)
    assert list(s.interfaces) == ["eth0"]
    eth0 = s.interfaces["eth0"]
    assert eth0.counters.rx_bytes == 3268 and eth0.counters.tx_bytes == 50802
    assert eth0.counters.rx_dropped == 0
    assert eth0.mtu == 1500 and eth0.operstate == "up" and eth0.carrier is True
    assert eth0.speed_mbps == 10000  # 1.25e9 bytes/s
    assert eth0.ifindex == 2802
    assert eth0.kind is None  # node_exporter does not say whether eth0 is a veth
    assert s.hostname == "node2"
    assert s.boot_id == "btime:1795995650"
    assert s.wall_s == pytest.approx(1796006072.4266322)
    assert s.problems == ()


def test_cpu_times_are_ticks_and_total_is_the_eight_modes():
    s = lab_sample()
    assert s.cpu.cpus == (0, 1)
    assert s.cpu.softirq[1] == 31328  # 313.28 s × USER_HZ
    for i in range(2):
        assert s.cpu.total[i] == sum(col[i] for col in (s.cpu.user, s.cpu.nice, s.cpu.system, s.cpu.idle,
                                                        s.cpu.iowait, s.cpu.irq, s.cpu.softirq, s.cpu.steal))
    assert s.softnet.cpus == (0, 1) and s.softnet.processed[1] == 53473876


def test_what_the_exporter_does_not_give_is_none_not_zero():
    s = lab_sample()
    assert s.softirqs is None  # no softirqs collector in 1.5.0
    assert s.tcp.tcp["RetransSegs"] == 0 and "OutSegs" in s.tcp.tcp
    # the default --collector.netstat.fields gives only these TcpExt counters
    assert set(s.tcp.ext) == {"ListenDrops", "ListenOverflows", "TCPSynRetrans", "TCPTimeouts"}
    assert "TCPLostRetransmit" not in s.tcp.ext


def test_host_scrape_unknown_speed_and_software_kinds():
    series = parse_exposition(VM)
    s = sample_from_series(series, wall_s=0, mono_s=0)
    assert set(s.interfaces) == {"eth0", "ifb0", "ifb1"}
    assert s.interfaces["eth0"].speed_mbps is None  # node_network_speed_bytes -125000 (speed -1)
    assert s.interfaces["ifb0"].kind == "ifb" and s.interfaces["ifb0"].operstate == "down"
    assert s.interfaces["ifb0"].carrier is None  # no node_network_carrier for a down link
    assert s.hostname == "vm"


def test_filtering_lines_before_parsing_changes_nothing():
    from prometheus_client.parser import text_string_to_metric_families

    everything = [(x.name, x.labels, x.value) for f in text_string_to_metric_families(VM) for x in f.samples]
    a = sample_from_series(everything, wall_s=0, mono_s=0)
    b = sample_from_series(parse_exposition(VM), wall_s=0, mono_s=0)
    assert a == b
    assert len(keep_lines(VM)) < len(VM) / 5


def test_the_filtered_scrape_gives_the_same_fields():
    s = sample_from_series(parse_exposition((DATA / "lab-node2-filtered.prom").read_text()), wall_s=0, mono_s=0)
    full = lab_sample()
    assert set(s.interfaces) == set(full.interfaces)
    assert s.cpu.cpus == full.cpu.cpus and s.hostname == "node2" and s.boot_id == full.boot_id


def test_softirqs_collector_series_map_per_cpu():
    # lines as node_exporter ≥ 1.6's softirqs collector prints them (collector/softirqs_linux.go)
    extra = "\n".join(f'node_softirqs_functions_total{{cpu="{c}",type="{t}"}} {v}'
                      for c in (0, 1) for t, v in (("NET_RX", 1000 + c), ("NET_TX", 50 + c), ("TIMER", 9)))
    series = parse_exposition(LAB + extra + "\n")
    s = sample_from_series(series, wall_s=0, mono_s=0)
    assert s.softirqs.cpus == (0, 1) and tuple(s.softirqs.net_rx) == (1000, 1001) and tuple(s.softirqs.net_tx) == (50, 51)


def test_two_scrapes_make_rates_through_the_model():
    series = parse_exposition(LAB)
    bumped = [(n, l, v + 1250 if n == "node_network_receive_bytes_total" else v) for n, l, v in series]
    node = Node("node2")
    node.observe(sample_from_series(series, wall_s=100.0, mono_s=100.0))
    node.observe(sample_from_series(bumped, wall_s=100.5, mono_s=100.5))
    assert node.state is NodeState.UP
    assert node.rates.interfaces["eth0"].rx_bytes_per_s == pytest.approx(2500.0)
    assert node.rates.interfaces["eth0"].tx_bytes_per_s == 0.0


@pytest.mark.parametrize("body", [
    b"<html><body>404 page not found</body></html>",
    b'node_network_receive_bytes_total{device="eth0" 12\n',
    b"node_network_receive_bytes_total{device=\"eth0\"} twelve\n",
])
def test_a_body_that_is_not_the_text_format_is_a_parse_error(body):
    with pytest.raises(ScrapeFailure) as info:
        scrape_to_sample(body, 1.0, 1.0, NodeClock())
    assert info.value.state is NodeState.PARSE_ERROR


def test_a_body_without_node_series_is_a_parse_error_for_the_node():
    s = scrape_to_sample(b"# only comments\nnode_time_seconds 5\n", 1.0, 1.0, NodeClock())
    node = Node("x")
    node.observe(s)
    assert node.state is NodeState.PARSE_ERROR and "node_network" in node.error


def test_binary_garbage_is_a_parse_error():
    with pytest.raises(ScrapeFailure) as info:
        scrape_to_sample(b"\xff\xfe\x00garbage", 1.0, 1.0, NodeClock())
    assert info.value.state is NodeState.PARSE_ERROR
    with pytest.raises(ExpositionError):
        parse_exposition('node_time_seconds{a="b} 1\n')


def test_node_clock_follows_the_node_and_ignores_a_step():
    clock = NodeClock()
    assert clock.advance(1000.0, 5.0) == 1000.0
    # scrape jitter (local 1.3 s) does not bend the interval: the node says 1.0 s
    assert clock.advance(1001.0, 6.3) == 1001.0
    # the node's clock stepped back an hour: the local advance is used for this interval
    assert clock.advance(1002.0 - 3600, 7.3) == pytest.approx(1002.0)
    assert clock.advance(1003.0 - 3600, 8.3) == pytest.approx(1003.0)
    # no node_time_seconds: the local clock carries on from where the node clock was
    assert clock.advance(None, 9.3) == pytest.approx(1004.0)


# --- the Prometheus API ---------------------------------------------------------------------

def test_fleet_query_escapes_instances():
    assert instance_matcher(None) == ""
    assert instance_matcher(["198.18.0.1:9100", "a.b"]) == r'instance=~"198\\.18\\.0\\.1:9100|a\\.b"'
    q = fleet_query(["n1:9100"])
    assert q.count('instance=~"n1:9100"') == 4
    assert 'mode="total"' not in q and '"mode", "total"' in q


def test_instances_match_inventory_names():
    assert matching_names("gpu001.cluster.example:9100") == ["gpu001.cluster.example:9100", "gpu001.cluster.example",
                                                              "gpu001"]
    assert matching_names("198.18.0.1:9100") == ["198.18.0.1:9100", "198.18.0.1"]
    assert matching_names("[fe80::1]:9100") == ["[fe80::1]:9100", "fe80::1"]
    keys = {"gpu001": ["gpu001"], "gpu002": ["gpu002"], "node3": ["node3", "198.18.0.3"]}
    keys["gpu004"] = ["gpu004"]
    got = match_instances({"gpu001.c:9100": None, "gpu002:9100": None, "198.18.0.3:9100": None,
                           "other:9100": None, "10.9.9.9:9100": "gpu004.c"}, keys)
    assert got == {"gpu001.c:9100": "gpu001", "gpu002:9100": "gpu002", "198.18.0.3:9100": "node3",
                   "10.9.9.9:9100": "gpu004"}
    assert names_for_instances({"a:9100": None, "b:9100": None, "b:9200": None}) == {
        "a:9100": "a", "b:9100": "b:9100", "b:9200": "b:9200"}
    assert names_for_instances({"198.18.0.1:9100": "node1", "198.18.0.2:9100": "node2"}) == {
        "198.18.0.1:9100": "node1", "198.18.0.2:9100": "node2"}
    # the same hostname twice (containers sharing the host's name): addresses tell them apart
    assert names_for_instances({"198.18.0.1:9100": "vm", "198.18.0.2:9100": "vm"}) == {
        "198.18.0.1:9100": "198.18.0.1", "198.18.0.2:9100": "198.18.0.2"}


RECORDED = DATA / "prometheus-query.json"


def test_recorded_api_answer_maps_every_lab_node():
    """A real answer of Debian's prometheus 2.42 to fleet_query(None), recorded in the lab."""
    vector = parse_vector(RECORDED.read_bytes())
    series, scraped = by_instance(vector)
    assert len(series) == 4 and set(scraped) == set(series)
    for instance, data in series.items():
        s = sample_from_series(data, wall_s=scraped[instance], mono_s=scraped[instance])
        assert "eth0" in s.interfaces and s.hostname == "node" + instance.split(".")[3].split(":")[0]
        assert s.cpu is not None and s.cpu.user is None  # softirq + total only
        assert all(t >= sf for t, sf in zip(s.cpu.total, s.cpu.softirq))


@pytest.mark.parametrize("body,words", [
    (b"not json", "not JSON"),
    (json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode(), "bad_data"),
    (json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode(), "vector"),
])
def test_bad_api_answers_are_named(body, words):
    with pytest.raises(PrometheusError, match=words):
        parse_vector(body)


def test_source_option():
    from netui.cli.sources import parse_source

    assert parse_source("ssh") == ("ssh", None)
    assert parse_source("node-exporter") == ("node-exporter", None)
    assert parse_source("prometheus=http://prom:9090") == ("prometheus", "http://prom:9090")
    for bad in ("prometheus", "prometheus=prom:9090", "prometheus=ftp://x", "nodeexporter", "node-exporter=x"):
        with pytest.raises(ValueError):
            parse_source(bad)


def test_cli_refuses_what_does_not_go_together(capsys):
    from netui.cli import main

    for argv, words in ((["snapshot", "--source", "node-exporter"], "needs hosts"),
                        (["snapshot", "--source", "bogus", "n1"], "unknown source"),
                        (["snapshot", "--source", "node-exporter", "--local", "n1"], "does not go with"),
                        (["snapshot", "--source", "node-exporter", "bad;host"], "bad;host")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert words in str(info.value), argv


def test_prometheus_job_reaches_the_reader_and_its_query():
    import asyncio

    from netui.cli.settings import SourceSettings
    from netui.cli.sources import build_http_sources
    from netui.cli.watch import build_parser
    from netui.collectors.prometheus import fleet_query
    from netui.exits import InputError

    def settings(*argv):
        return SourceSettings.from_options(build_parser("snapshot").parse_args(argv))

    sources, client = build_http_sources(settings("--source", "prometheus=http://127.0.0.1:9", "--prometheus-job",
                                                  "node", "n1", "n2"), "prometheus", "http://127.0.0.1:9")
    try:
        assert {s.reader.job for s in sources} == {"node"} and [s.name for s in sources] == ["n1", "n2"]
        assert 'job="node"' in fleet_query(["n1:9100"], sources[0].reader.job)
    finally:
        asyncio.run(client.close())
    with pytest.raises(InputError, match="goes with --source prometheus"):
        build_http_sources(settings("--source", "node-exporter", "--prometheus-job", "node", "n1"),
                           "node-exporter", None)


def test_a_wobbling_boot_time_is_the_same_boot():
    from netui.collectors.exposition import steady_boot_id

    assert steady_boot_id(None, "btime:100") == "btime:100"
    assert steady_boot_id("btime:100", "btime:101") == "btime:100"  # NTP moved btime by a second
    assert steady_boot_id("btime:100", "btime:99") == "btime:100"
    assert steady_boot_id("btime:100", "btime:5000") == "btime:5000"  # a reboot
    assert steady_boot_id("btime:100", None) is None


@pytest.mark.slow
def test_reading_ssh_config_for_http_sources_closes_the_file(tmp_path):
    import gc
    import warnings

    from netui.cli.sources import _mentions_hostname

    config = tmp_path / "config"
    config.write_text("Host gpu*\n    HostName 198.18.0.1\n")
    gc.collect()  # earlier tests' garbage (an event loop left unclosed) warns now, not below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert _mentions_hostname([str(config), str(tmp_path / "absent")]) is True
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_second_job_on_the_same_instance_is_not_mixed_in():
    """Another scrape job relabelled onto node1's instance (here: node2's exporter, scraped at
    other times): node1 is read from the fleet's job alone, counters and scrape time alike."""
    vector = parse_vector(RECORDED.read_bytes())
    node1 = [(labels, value) for labels, value in vector if labels["instance"] == "198.18.0.1:9100"]
    node2 = [(labels, value) for labels, value in vector if labels["instance"] == "198.18.0.2:9100"]
    alt = [(dict(labels, instance="198.18.0.1:9100", job="a-alt"),
            value + 0.7 if labels.get("netui") == "scrape_time" else value + 123456) for labels, value in node2]
    series, scraped = by_instance(vector + alt)
    assert {labels["job"] for _name, labels, _value in series["198.18.0.1:9100"]} == {"node"}
    assert sorted(series["198.18.0.1:9100"], key=repr) == sorted(
        [(labels.get("__name__", "node_cpu_seconds_total"), labels, value) for labels, value in node1
         if labels.get("netui") != "scrape_time"], key=repr)
    assert scraped["198.18.0.1:9100"] == next(v for labels, v in node1 if labels.get("netui") == "scrape_time")
    # the other job alone reads the instance the first time; once read from "node", a missed
    # scrape of "node" leaves it without a sample rather than switching
    series, scraped = by_instance(alt)
    assert {labels["job"] for _name, labels, _value in series["198.18.0.1:9100"]} == {"a-alt"}
    others = [(labels, value) for labels, value in vector if labels["instance"] != "198.18.0.1:9100"]
    series, scraped = by_instance(others + alt, prefer={"198.18.0.1:9100": "node"})
    assert "198.18.0.1:9100" not in series and "198.18.0.1:9100" not in scraped
    assert len(series) == 3
    # read from the other job at first (the fleet's job had not scraped it yet): the fleet's job
    # takes over as soon as it is there
    series, scraped = by_instance(vector + alt, prefer={"198.18.0.1:9100": "a-alt"})
    assert {labels["job"] for _name, labels, _value in series["198.18.0.1:9100"]} == {"node"}


def test_the_scrape_time_comes_from_a_node_exporter_series_not_up():
    q = fleet_query(["n1:9100"], job="node")
    assert "timestamp(up" not in q
    assert 'max by (instance, job) (timestamp(node_network_receive_bytes_total{instance=~"n1:9100",job="node"}))' in q
    assert q.count('job="node"') == 4
