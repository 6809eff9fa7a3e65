"""Pure parsers of the sysfs values netui reads of an interface (/sys/class/net/<if>/…):
a value that is missing, empty or not what the kernel writes is None, never an error.
"""

from __future__ import annotations


def parse_int_file(text: str | None) -> int | None:
    """A sysfs integer file (mtu, speed, carrier, ifindex): None when empty or not a number."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def parse_speed_mbps(text: str | None) -> int | None:
    """/sys/class/net/<if>/speed: Mbit/s, or None for an empty file, EINVAL or -1."""
    value = parse_int_file(text)
    return value if value is not None and value > 0 else None


def parse_carrier(text: str | None) -> bool | None:
    value = parse_int_file(text)
    return None if value not in (0, 1) else bool(value)


def parse_operstate(text: str | None) -> str | None:
    if text is None:
        return None
    value = text.strip()
    return value if value and value.isprintable() and len(value) < 32 else None
