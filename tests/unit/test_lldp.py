"""LLDP neighbours from lldpctl's two JSON shapes, on real output (lldpd 1.0.16 in the lab,
and lldpd's own expected output), and the states of a node without LLDP."""

from __future__ import annotations

import dataclasses
import json

import pytest

from netui.collectors.lldp import (
    LLDP_COMMAND,
    MAX_NAME_CHARS,
    MAX_OUTPUT_CHARS,
    STATE_NO_LLDPCTL,
    STATE_NOT_RUNNING,
    STATE_OK,
    LldpError,
    LldpNeighbour,
    lldp_state,
    parse_lldpctl,
)
from tests.testdata import data_text

SHAPES = ["json0", "json"]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_node_hears_its_leaf_and_the_port_it_is_cabled_to(shape):
    (n,) = parse_lldpctl(data_text(f"lldp/node-one-neighbour.{shape}"))
    assert (n.interface, n.switch, n.port, n.port_descr) == ("eth0", "leaf2", "swp1", "swp1")
    assert n.chassis_id == "66:3e:24:fe:5f:72"


@pytest.mark.parametrize("shape", SHAPES)
def test_several_interfaces_keep_their_order(shape):
    # json turns the one-interface object into a list of one-key objects here: the trap
    text = data_text(f"lldp/leaf-three-neighbours.{shape}")
    assert [(n.interface, n.switch, n.port) for n in parse_lldpctl(text)] == [
        ("uplink", "spine", "swp1"), ("swp1", "node1", "eth0"), ("swp2", "node2", "eth0")]


def test_the_two_shapes_say_the_same():
    for name in ("node-one-neighbour", "leaf-three-neighbours", "spine-two-neighbours",
                 "lldpd-project-neighbors", "no-neighbour"):
        assert parse_lldpctl(data_text(f"lldp/{name}.json")) == parse_lldpctl(data_text(f"lldp/{name}.json0"))


def test_the_spine_hears_each_leaf_on_its_own_port():
    neighbours = parse_lldpctl(data_text("lldp/spine-two-neighbours.json0"))
    assert {n.interface: (n.switch, n.port) for n in neighbours} == {
        "swp1": ("leaf1", "uplink"), "swp2": ("leaf2", "uplink")}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_mac_port_id_gives_way_to_the_port_description(shape):
    # lldpd's own expected output: the neighbour sends its MAC as port ID
    (n,) = parse_lldpctl(data_text(f"lldp/lldpd-project-neighbors.{shape}"))
    assert n == LldpNeighbour(interface="eth0", switch="ns-2.example.com", port="eth1",
                              port_descr="eth1", chassis_id="00:00:00:00:00:02")


@pytest.mark.parametrize("shape", SHAPES)
def test_no_neighbour_is_an_empty_answer(shape):
    assert parse_lldpctl(data_text(f"lldp/no-neighbour.{shape}")) == ()


def test_a_chassis_without_a_system_name_is_named_by_its_id():
    doc = json.loads(data_text("lldp/node-one-neighbour.json"))
    iface = doc["lldp"]["interface"]["eth0"]
    iface["chassis"] = iface["chassis"]["leaf2"]  # lldpctl's json: no name, no key
    (n,) = parse_lldpctl(json.dumps(doc))
    assert (n.switch, n.port) == ("66:3e:24:fe:5f:72", "swp1")
    doc0 = json.loads(data_text("lldp/node-one-neighbour.json0"))
    del doc0["lldp"][0]["interface"][0]["chassis"][0]["name"]
    assert parse_lldpctl(json.dumps(doc0)) == (n,)


def test_a_neighbour_is_frozen():
    (n,) = parse_lldpctl(data_text("lldp/node-one-neighbour.json0"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.switch = "elsewhere"


@pytest.mark.parametrize("text, says", [
    ("", "not JSON"),
    ('{"lldp": [{"interface": [', "not JSON"),
    ("[]", 'no "lldp"'),
    ('{"other": 1}', 'no "lldp"'),
    ('{"lldp": 3}', "int"),
    ('{"lldp": [{"interface": {"eth0": {}}}]}', '"interface"'),
    ('{"lldp": [{"interface": [{"via": "LLDP"}]}]}', '"name"'),
    ('{"lldp": {"interface": "eth0"}}', '"interface"'),
    ('{"lldp": {"interface": {"eth0": {"chassis": {"x": {"id": [1]}}}}}}', "id"),
    ('{"lldp": [{"interface": [{"name": "eth0", "chassis": [{"name": [{"value": {}}]}], "port": [{}]}]}]}',
     "string"),
])
def test_malformed_output_is_a_clear_error(text, says):
    with pytest.raises(LldpError) as caught:
        parse_lldpctl(text)
    assert says in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_cut_short_real_output_is_a_clear_error():
    text = data_text("lldp/leaf-three-neighbours.json0")
    for cut in range(1, len(text) - 3, 97):
        with pytest.raises(LldpError):
            parse_lldpctl(text[:cut])


# ---- states ----------------------------------------------------------------------------------
def test_states_of_a_node_without_lldp():
    assert lldp_state(127, "", "netui: lldpctl not found\n") == ((), STATE_NO_LLDPCTL)
    # lldpctl 1.0.16 with no daemon behind the socket (captured in the lab), and the other errnos
    for errno in ("No such file or directory", "Permission denied", "Connection refused"):
        stderr = f"2026-12-02T00:14:53 [WARN/control] unable to connect to socket /run/lldpd.socket: {errno}\n"
        assert lldp_state(1, "", stderr) == ((), STATE_NOT_RUNNING)


def test_a_good_read_and_a_garbled_one():
    neighbours, state = lldp_state(0, data_text("lldp/node-one-neighbour.json0"), "")
    assert state == STATE_OK and neighbours[0].switch == "leaf2"
    neighbours, state = lldp_state(0, "{not json", "")
    assert neighbours == () and state.startswith("no LLDP: lldpctl output is not JSON")
    assert lldp_state(2, "", "lldpctl: something odd\n") == ((), "no LLDP: lldpctl: something odd")
    assert lldp_state(None, "", "") == ((), "no LLDP: lldpctl ended with status None")


def test_the_command_is_a_constant_that_asks_for_json0():
    assert LLDP_COMMAND.endswith("exec lldpctl -f json0")
    assert "{" not in LLDP_COMMAND.replace("{ echo", "")  # no template left to fill


# ---- what the network sends is not trusted ---------------------------------------------------
def _with(system: str, port: str = "swp1", iface: str = "eth0") -> str:
    """node-one-neighbour.json0 with its system name, port and interface replaced."""
    doc = json.loads(data_text("lldp/node-one-neighbour.json0"))
    entry = doc["lldp"][0]["interface"][0]
    entry["name"] = iface
    entry["chassis"][0]["name"][0]["value"] = system
    entry["port"][0]["id"][0]["value"] = port
    return json.dumps(doc)


def test_control_characters_and_escape_sequences_never_pass():
    (n,) = parse_lldpctl(_with("\x1b[2J\x1b]0;owned\x07leaf\r1\x00", "sw\x1b[31mp1\n", "eth\x9b0"))
    assert n.switch == "\\x1b[2J\\x1b]0;owned\\x07leaf\\x0d1\\x00" and n.port == "sw\\x1b[31mp1"
    assert n.interface == "eth\\x9b0"
    assert all(c.isprintable() for text in (n.switch, n.port, n.interface, n.port_descr) for c in text)


def test_long_names_are_cut_and_a_name_of_nothing_printable_is_no_switch():
    (n,) = parse_lldpctl(_with("L" * 5000, "P" * 5000))
    assert n.switch == "L" * (MAX_NAME_CHARS - 1) + "…" and n.port == "P" * (MAX_NAME_CHARS - 1) + "…"
    doc = json.loads(_with("\x1b\x07\x00"))
    doc["lldp"][0]["interface"][0]["chassis"][0]["id"][0]["value"] = "\x1b\x1b"
    (n,) = parse_lldpctl(json.dumps(doc))
    assert n.switch == "" and n.chassis_id == ""


def test_deeply_nested_or_huge_output_is_a_state():
    for text in ("[" * 100_000, '{"lldp": ' + "[" * 200_000 + "]" * 200_000 + "}",
                 '{"lldp": []}' + " " * (MAX_OUTPUT_CHARS + 1)):
        neighbours, state = lldp_state(0, text, "")
        assert neighbours == () and state.startswith("no LLDP: lldpctl output "), state
