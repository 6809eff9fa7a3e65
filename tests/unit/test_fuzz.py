"""Whatever a node sends, the parsers answer with a result or ParseError — never another exception.

Three kinds of input: arbitrary text, text made of the formats' own tokens, and the real
fixtures mutated (truncated at any point, lines dropped or repeated, numbers replaced).
Results must also be usable: per-CPU columns as long as the CPU list, since rates zip them.
"""

from __future__ import annotations

import array
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netui.collectors import procfs, sysfs
from netui.collectors.assemble import IFACE_ATTRS, sample_from_texts
from netui.collectors.protocol import PROC_FILES
from netui.collectors.procfs import ParseError
from netui.model.samples import NodeSample
from tests.testdata import PROCFS, data_text

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# (fixture, key in PROC_FILES) -- the real texts the mutations start from
FIXTURE_FILES = {
    "proc/net/dev": "net/dev",
    "proc/pid_26231_net/dev": "net/dev",
    "proc/pid_26231_net/snmp": "net/snmp",
    "proc/pid_26231_net/netstat": "net/netstat",
    "proc/stat": "stat",
    "proc/softirqs": "softirqs",
    "proc/net/softnet_stat": "net/softnet_stat",
}
# read at import: the strategies below are built from them (a missing one fails the collection)
FIXTURE_TEXTS: dict[str, str] = {rel: data_text(f"{PROCFS}/{rel}") for rel in FIXTURE_FILES}


def check_columns(cpus, *columns) -> None:
    for column in columns:
        assert len(column) == len(cpus)


def parse_everything(text: str) -> None:
    """Run every parser on ``text``; each may refuse it with ParseError only."""
    for parse in (procfs.parse_net_dev, procfs.parse_keyed_pairs, procfs.parse_stat_cpus,
                  procfs.parse_softirqs, procfs.parse_softnet_stat):
        try:
            result = parse(text)
        except ParseError:
            continue
        if parse is procfs.parse_stat_cpus:
            check_columns(result.cpus, result.user, result.nice, result.system, result.idle, result.iowait,
                          result.irq, result.softirq, result.steal, result.total)
        elif parse is procfs.parse_softirqs:
            check_columns(result.cpus, result.net_rx, result.net_tx)
        elif parse is procfs.parse_softnet_stat:
            check_columns(result.cpus, result.processed, result.dropped, result.time_squeeze)
        elif parse is procfs.parse_net_dev:
            assert all(len(c) == 16 for c in map(tuple, result.values()))
        else:
            assert all(isinstance(v, int) for pair in result.values() for v in pair.values())
    boot = procfs.parse_boot_time(text)
    assert boot is None or isinstance(boot, int)
    value = sysfs.parse_int_file(text)
    assert value is None or isinstance(value, int)
    speed = sysfs.parse_speed_mbps(text)
    assert speed is None or speed > 0
    assert sysfs.parse_carrier(text) in (None, True, False)
    state = sysfs.parse_operstate(text)
    assert state is None or (state and state.isprintable())


# --- inputs ----------------------------------------------------------------------------------

TOKENS = [
    "\n", " ", "  ", "\t", ":", "|", "-", "0", "1", "7", "42", "-1", "00000001", "f0000769", "ffffffff",
    "18446744073709551616", "9" * 30, "0x1f", "1e3", "NaN", ",", "²", "٣", "\x00", "\r", "é",
    "cpu", "cpu ", "cpu0", "cpu12", "CPU0", "CPU1", "NET_RX:", "NET_TX:", "HI:", "btime ",
    "Tcp:", "TcpExt:", "Ip:", "RetransSegs", "OutSegs", "MaxConn",
    "eth0:", "lo:", "Inter-|", " face |", "up", "down",
]
format_text = st.lists(st.sampled_from(TOKENS), max_size=120).map("".join)
REPLACEMENTS = ["", "-", "x", " ", ":", "\n", "9" * 25, "-1", "ff", "\x00", "é", "٣", "²", "1e3", "0x1", ",", "|"]


@st.composite
def mutated(draw, text: str) -> str:
    """The text after a few of: truncation, dropped/repeated/swapped lines, fields dropped or
    replaced (numbers mostly)."""
    ops = st.sampled_from(["cut", "line", "repeat", "swap", "field", "field", "number", "number"])
    for op in draw(st.lists(ops, min_size=1, max_size=4)):
        lines = text.split("\n")
        i = draw(st.integers(0, len(lines) - 1))
        if op == "cut":
            text = text[: draw(st.one_of(st.integers(0, min(len(text), 2_000)), st.integers(0, len(text))))]
            continue
        if op == "line":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            fields = list(re.finditer(r"\S+" if op == "field" else r"[0-9a-f]+", lines[i]))
            if fields:
                m = fields[draw(st.integers(0, len(fields) - 1))]
                new = "" if op == "field" else draw(st.sampled_from(REPLACEMENTS))
                lines[i] = lines[i][: m.start()] + new + lines[i][m.end():]
        text = "\n".join(lines)
    return text


@st.composite
def mutated_fixture(draw) -> tuple[str, str]:
    rel = draw(st.sampled_from(sorted(FIXTURE_TEXTS)))
    return rel, draw(mutated(FIXTURE_TEXTS[rel]))


# --- the parsers -----------------------------------------------------------------------------


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=2_000))
def test_parsers_on_arbitrary_text(text):
    parse_everything(text)


@pytest.mark.slow
@FUZZ
@given(format_text)
def test_parsers_on_text_made_of_format_tokens(text):
    parse_everything(text)


@pytest.mark.slow
@FUZZ
@given(mutated_fixture())
def test_parsers_on_mutated_fixtures(case):
    _, text = case
    parse_everything(text)


@pytest.mark.slow
@FUZZ
@given(st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["-1\n", "", "0", "25000\n", "1\n", "up\n"])))
def test_sysfs_parsers_on_any_file_content(text):
    speed = sysfs.parse_speed_mbps(text)
    assert speed is None or speed > 0
    assert sysfs.parse_carrier(text) in (None, True, False)
    assert sysfs.parse_operstate(text) is None or sysfs.parse_operstate(text).isprintable()


# --- the whole sample ------------------------------------------------------------------------

texts_or_none = st.one_of(st.none(), st.text(max_size=300), format_text)
iface_attrs = st.dictionaries(
    st.sampled_from(["eth0", "lo", "ib0", "veth1"]),
    st.fixed_dictionaries(
        {}, optional={k: texts_or_none for k in (*IFACE_ATTRS, "link", "bridge", "bonding", "device")}
    ),
    max_size=4,
)


@st.composite
def node_texts(draw) -> dict[str, str | None]:
    """Texts under every PROC_FILES key: missing, garbage, or a mutated real file."""
    texts: dict[str, str | None] = {}
    for key in PROC_FILES:
        choices = [st.none(), texts_or_none]
        real = [rel for rel, k in FIXTURE_FILES.items() if k == key]
        if real:
            choices.append(st.sampled_from(real).flatmap(lambda rel: mutated(FIXTURE_TEXTS[rel])))
            choices.append(st.sampled_from([FIXTURE_TEXTS[rel] for rel in real]))
        texts[key] = draw(st.one_of(*choices))
    return texts


def has_problem(sample: NodeSample, key: str) -> bool:
    return any(p.startswith(PROC_FILES[key] + ":") for p in sample.problems)


@pytest.mark.slow
@FUZZ
@given(node_texts(), iface_attrs)
def test_sample_from_texts_never_raises_and_names_what_is_missing(texts, attrs):
    sample = sample_from_texts(texts, attrs, wall_s=1.0, mono_s=2.0)

    assert isinstance(sample, NodeSample)
    assert (sample.cpu is None) == has_problem(sample, "stat")
    assert (sample.softirqs is None) == has_problem(sample, "softirqs")
    assert (sample.softnet is None) == has_problem(sample, "net/softnet_stat")
    assert (sample.tcp is None) == has_problem(sample, "net/snmp")
    if has_problem(sample, "net/dev"):
        assert sample.interfaces == {}
    for name, iface in sample.interfaces.items():
        assert iface.name == name
        assert iface.speed_mbps is None or iface.speed_mbps > 0


# --- the remote sampler's fast paths agree with its careful ones ------------------------------


def _sampler() -> dict:
    from netui.collectors.ssh import SAMPLER_SOURCE

    ns: dict = {"__name__": "netui_sampler_under_fuzz"}
    exec(compile(SAMPLER_SOURCE, "sampler.py", "exec"), ns)  # noqa: S102 - our own source
    return ns


SAMPLER = _sampler()


def netdev_line_by_line(data: bytes):
    """/proc/net/dev's table the plain way, as netdev_table must give it (or None)."""
    names, values = [], []
    for line in data.split(b"\n")[2:]:
        if not line.strip():
            continue
        name, sep, rest = line.partition(b":")
        fields = rest.split()
        if not sep or not name.strip() or len(fields) != 16:
            return None
        names.append(name.strip())
        values += fields
    if not names:
        return None
    try:
        table = array.array("Q", map(int, values))
    except (ValueError, OverflowError):
        return None
    return names, b" ".join(names) + b"\n" + table.tobytes()


@pytest.mark.slow
@FUZZ
@given(st.sampled_from(["proc/net/dev", "proc/pid_26231_net/dev"]).flatmap(lambda rel: mutated(FIXTURE_TEXTS[rel])))
def test_the_samplers_net_dev_columns_read_what_its_lines_read(text):
    data = text.encode()
    assert SAMPLER["netdev_table"](data) == netdev_line_by_line(data)


@pytest.mark.slow
@FUZZ
@given(mutated(FIXTURE_TEXTS["proc/pid_26231_net/snmp"]) | format_text,
       mutated(FIXTURE_TEXTS["proc/pid_26231_net/netstat"]) | format_text)
def test_the_samplers_tcp_fast_path_gives_the_careful_paths_table_or_declines(snmp, netstat):
    snmp_b, netstat_b = snmp.encode(), netstat.encode()
    fast = SAMPLER["Sampler"]().tcp_table(snmp_b, netstat_b)
    careful = SAMPLER["tcp_summary"](SAMPLER["lines_with"](snmp_b, (b"Tcp:",)), SAMPLER["tcpext_lines"](netstat_b))
    assert fast is None or fast == careful
