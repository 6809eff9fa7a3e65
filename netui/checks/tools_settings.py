"""What the checks' settings share (PairSettings in checks/pairs/tools.py, LatencySettings in
checks/latency/tools.py): to and from the plain dict the app remembers, the config file and
a saved report's ``settings`` hold."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TypeVar

SettingsT = TypeVar("SettingsT", bound="DictSettings")


class DictSettings:
    """For a settings dataclass: ``to_dict()`` every field; ``from_dict()`` the fields it
    knows, the others (a newer netui's, a hand-edited file's) left out; the missing ones
    take their defaults."""

    __slots__ = ()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls: type[SettingsT], data: dict) -> SettingsT:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
