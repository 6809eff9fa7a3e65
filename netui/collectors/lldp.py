"""LLDP neighbours as lldpd reports them: which switch and port each of a node's NICs is cabled to.

    parse_lldpctl(text) -> tuple[LldpNeighbour, ...]     # `lldpctl -f json0` or `-f json`
    lldp_state(exit_status, stdout, stderr) -> (neighbours, state)

lldpctl has two JSON shapes. ``json0`` is regular: every object is a list, every value a
``{"value": ...}`` object, interfaces carry their name. ``json`` is compact and changes shape
with the count: one interface is ``{"interface": {"eth0": {...}}}``, several are a list of
one-key objects; a chassis is keyed by its system name (by its id when it has none); a
string stands where json0 has ``[{"value": ...}]``. Both are read here; netui asks for json0.

Nothing is computed here: which switch is a node's leaf is the topology's business.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from netui.model.text import safe_line, safe_text

# What netui runs on a node (a shell script): a constant, nothing from a user or a node in it.
# Debian installs lldpctl in /usr/sbin, which is not on a user's PATH.
LLDP_COMMAND = ('PATH="$PATH:/usr/sbin:/sbin"; '
                "command -v lldpctl >/dev/null 2>&1 || { echo 'netui: lldpctl not found' >&2; exit 127; }; "
                "exec lldpctl -f json0")
NOT_FOUND_STATUS = 127
MAX_OUTPUT_CHARS = 4 << 20  # lldpctl's JSON for a node's few NICs is a few kB: more is not read
MAX_NAME_CHARS = 255  # a system name, port or interface from the network, as netui keeps it

STATE_UNREAD = "not read"
STATE_READING = "reading"  # the first read is under way (in a snapshot: it did not finish in time)
STATE_OK = "ok"
STATE_NO_LLDPCTL = "no LLDP: lldpctl not found"
STATE_NOT_RUNNING = "no LLDP: lldpd not running"


class LldpError(ValueError):
    """lldpctl's output is not the JSON it should be; the message says what was wrong."""


@dataclass(frozen=True, slots=True)
class LldpNeighbour:
    """What one of the node's interfaces hears: the switch (system name) and its port.

    ``port`` is the port's name as the switch calls it: the port ID when the switch sends an
    interface name (``ifname``/``local``), else the port description, else the port ID
    (a MAC address, say). ``switch`` is the system name, or the chassis ID when none is sent.
    """

    interface: str
    switch: str
    port: str
    port_descr: str
    chassis_id: str


def parse_lldpctl(text: str) -> tuple[LldpNeighbour, ...]:
    """The neighbours in ``lldpctl -f json0`` or ``-f json`` output, in interface order.

    Raises LldpError on anything that is not lldpctl's JSON (empty, cut short, another shape).
    """
    if len(text) > MAX_OUTPUT_CHARS:
        raise LldpError(f"lldpctl output is larger than {MAX_OUTPUT_CHARS >> 20} MiB")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise LldpError(f"lldpctl output is not JSON: {exc}") from None
    except RecursionError:
        raise LldpError("lldpctl output is not JSON: nested too deep") from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise LldpError("lldpctl output has no \"lldp\" object")
    top = doc["lldp"]
    if isinstance(top, list):
        return tuple(_json0(top))
    if isinstance(top, dict):
        return tuple(_json(top))
    raise LldpError(f"lldpctl's \"lldp\" is a {type(top).__name__}, not an object or a list")


def lldp_state(exit_status: int | None, stdout: str, stderr: str) -> tuple[tuple[LldpNeighbour, ...], str]:
    """(neighbours, state) from a run of LLDP_COMMAND: state is STATE_OK, or why there is none.

    A node without lldpctl or without a running lldpd is a state, never an error.
    """
    if exit_status == NOT_FOUND_STATUS or "lldpctl not found" in stderr:
        return (), STATE_NO_LLDPCTL
    if "unable to connect to socket" in stderr:  # lldpctl: [WARN/control] unable to connect …
        return (), STATE_NOT_RUNNING
    if exit_status != 0:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"lldpctl ended with status {exit_status}"
        return (), f"no LLDP: {safe_line(why, 200)}"
    try:
        return parse_lldpctl(stdout), STATE_OK
    except LldpError as exc:
        return (), f"no LLDP: {exc}"


# ---- json0: lists everywhere ----------------------------------------------------------------
def _json0(top: list) -> Iterator[LldpNeighbour]:
    for block in top:
        _expect(block, dict, "an lldp entry")
        for iface in _expect(block.get("interface", []), list, "\"interface\""):
            _expect(iface, dict, "an interface")
            name = _expect(iface.get("name"), str, "an interface's \"name\"")
            for chassis, port in zip(_list0(iface, "chassis"), _list0(iface, "port")):
                ident = _first(_list0(chassis, "id"))
                port_id = _first(_list0(port, "id"))
                yield _neighbour(name,
                                 system=_value0(chassis, "name"),
                                 chassis_id=_str(ident.get("value")),
                                 port_type=_str(port_id.get("type")),
                                 port_id=_str(port_id.get("value")),
                                 port_descr=_value0(port, "descr"))


def _list0(obj: dict, key: str) -> list:
    return _expect(obj.get(key, []), list, f"\"{key}\"")


def _first(items: list) -> dict:
    return _expect(items[0], dict, "an entry") if items else {}


def _value0(obj: dict, key: str) -> str:
    return _str(_first(_list0(obj, key)).get("value"))


# ---- json: compact, the shape depends on the count -------------------------------------------
def _json(top: dict) -> Iterator[LldpNeighbour]:
    for name, iface in _keyed(top.get("interface", {}), "\"interface\""):
        _expect(iface, dict, f"interface {name}")
        chassis = iface.get("chassis", {})
        _expect(chassis, dict, "\"chassis\"")
        # keyed by the system name; a chassis without one is the object itself
        system, chassis = ("", chassis) if "id" in chassis else next(iter(chassis.items()), ("", {}))
        _expect(chassis, dict, "a chassis")
        port = _expect(iface.get("port", {}), dict, "\"port\"")
        port_id, ident = _id(port.get("id")), _id(chassis.get("id"))
        yield _neighbour(name, system=system, chassis_id=_str(ident.get("value")),
                         port_type=_str(port_id.get("type")), port_id=_str(port_id.get("value")),
                         port_descr=_str(port.get("descr")))


def _keyed(obj, what: str) -> Iterator[tuple[str, object]]:
    """``{"a": {...}}`` or ``[{"a": {...}}, {"b": {...}}]`` → ("a", {...}), ("b", {...})."""
    if isinstance(obj, dict):
        yield from obj.items()
    elif isinstance(obj, list):
        for item in obj:
            yield from _expect(item, dict, f"an entry of {what}").items()
    else:
        raise LldpError(f"{what} is a {type(obj).__name__}, not an object or a list")


def _id(obj) -> dict:
    if obj is None:
        return {}
    if isinstance(obj, str):
        return {"value": obj}
    return _expect(obj, dict, "an id")


# ---- both -----------------------------------------------------------------------------------
def _neighbour(interface: str, *, system: str, chassis_id: str, port_type: str, port_id: str,
               port_descr: str) -> LldpNeighbour:
    if port_type in ("ifname", "local") and port_id:
        port = port_id
    else:
        port = port_descr or port_id
    system, chassis_id = _printable(system), _printable(chassis_id)
    return LldpNeighbour(interface=_printable(interface), switch=system or chassis_id, port=_printable(port),
                         port_descr=_printable(port_descr), chassis_id=chassis_id)


def _printable(text: str) -> str:
    """A string from the network as netui keeps it (model/text.py ``safe_text``: control
    characters and escape sequences shown as their escapes, nothing a terminal would obey, at
    most MAX_NAME_CHARS), blanks trimmed. A name with nothing printable in it is empty: no switch."""
    if not text.isprintable() and not any(c.isprintable() and not c.isspace() for c in text):
        return ""
    return safe_text(text.strip(), MAX_NAME_CHARS)


def _str(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (str, int, float)):
        return str(value)
    raise LldpError(f"expected a string in lldpctl output, found a {type(value).__name__}")


def _expect(value, kind: type, what: str):
    if not isinstance(value, kind):
        raise LldpError(f"{what} in lldpctl output is a {type(value).__name__}, "
                        f"not {'an object' if kind is dict else 'a list' if kind is list else 'a string'}")
    return value
