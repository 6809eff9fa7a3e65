"""The configuration file: health thresholds, health rules and straggler rules laid over
the defaults.

    ~/.config/netui/config.toml     ($XDG_CONFIG_HOME/netui/config.toml), or --config PATH

A metric may set any of ``careful``, ``warning``, ``critical``; the others keep their
defaults (netui/model/health.py ``DEFAULT_THRESHOLDS``). ``[health]`` sets
``retrans_min_segments`` and ``hold_intervals`` (``HealthRules``); ``[straggler]`` any field of
``StragglerRules``, the hold (``flag_intervals`` of ``window_intervals``, ``clear_intervals``)
and the victim rule (``victims``) among them; ``mesh`` the probe mesh ("on", "off" or a rate in
probes a second, as ``--mesh``, which wins over it; on without either). A missing default file is no
error; a file named with ``--config`` must exist. Unknown keys and bad values are a
``ConfigError`` whose message names the file and the key — never a traceback.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from netui.model.health import ABOVE_ZERO, DEFAULT_THRESHOLDS, HealthRules, Threshold
from netui.model.mesh import MeshSettings, parse_mesh_option
from netui.model.straggler import StragglerRules
from netui.readlimits import MAX_TOML_DEPTH, toml_too_deep

LEVELS = ("careful", "warning", "critical")
MAX_CONFIG_BYTES = 1 << 20  # a configuration file is a few hundred bytes; a bigger one is a wrong path


def _tomllib():
    """The TOML parser, imported when there is a file to read (most starts have none)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


class ConfigError(ValueError):
    """A configuration file that cannot be used, said in words."""


@dataclass(frozen=True)
class Config:
    thresholds: dict[str, Threshold] = field(default_factory=dict)  # only the overridden metrics
    straggler: StragglerRules = field(default_factory=StragglerRules)
    health: HealthRules = field(default_factory=HealthRules)
    path: str | None = None  # the file read, None when there was none
    # mesh = "on" | "off" | RATE (model/mesh.py): the probe mesh, on unless the file says otherwise
    mesh: MeshSettings | None = field(default_factory=MeshSettings)
    mesh_said: bool = False  # the file says ``mesh``: else the default, on up to DEFAULT_MESH_NODES nodes


def default_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "netui" / "config.toml"


def load_config(path: str | None = None) -> Config:
    """The configuration from ``path`` (must exist), or from the default file if it exists."""
    explicit = path is not None
    p = Path(os.path.expanduser(path)) if explicit else default_path()
    try:
        data = read_regular(p, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"{p}: no such file") from None
        return Config()
    except OSError as exc:
        raise ConfigError(f"{p}: {exc.strerror or exc}") from None
    return parse_config(data.decode("utf-8", "replace"), str(p))


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; OSError (with a strerror that
    says why) for anything else: a directory, a FIFO (never waited on), a device such as
    /dev/zero (never read without end), a file too large."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes: not a netui configuration file")
    return data


def _number(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: must be a number, not {value!r}")
    if math.isnan(value) or value < 0:
        raise ConfigError(f"{where}: must be 0 or more (inf for never), not {value!r}")
    return float(value)


def parse_config(text: str, source: str = "config.toml") -> Config:
    """A Config from TOML text; ConfigError naming ``source`` and the key on any problem."""
    toml = _tomllib()
    deep = toml_too_deep(text)
    if deep is not None:
        raise ConfigError(f"{source}:{deep}: arrays or tables nested more than {MAX_TOML_DEPTH} deep")
    try:
        doc = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    unknown = doc.keys() - {"thresholds", "straggler", "health", "mesh"}
    if unknown:
        raise ConfigError(f"{source}: unknown section {sorted(unknown)[0]!r} "
                          "(known: mesh, health, thresholds, straggler)")
    mesh: MeshSettings | None = MeshSettings()
    if "mesh" in doc:
        value = doc["mesh"]
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f'{source}: mesh: "on", "off" or a rate in probes a second, not {value!r}')
        try:
            mesh = parse_mesh_option(str(value))
        except ValueError as exc:
            raise ConfigError(f"{source}: mesh: {exc}") from None
    thresholds: dict[str, Threshold] = {}
    section = doc.get("thresholds", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: thresholds: must be a table")
    for metric, levels in section.items():
        where = f"{source}: thresholds.{metric}"
        if metric not in DEFAULT_THRESHOLDS:
            raise ConfigError(f"{where}: unknown metric (known: {', '.join(sorted(DEFAULT_THRESHOLDS))})")
        if not isinstance(levels, dict):
            raise ConfigError(f"{where}: must be a table such as {{ careful = 1, warning = 10, critical = 100 }}")
        bad = levels.keys() - set(LEVELS)
        if bad:
            raise ConfigError(f"{where}.{sorted(bad)[0]}: unknown level (known: {', '.join(LEVELS)})")
        # 0 means "any at all", as docs/health.md's "above 0/s" says: a level at exactly 0 would
        # mark every idle node, so it becomes the defaults' "above zero"
        values = {k: _number(f"{where}.{k}", v) or ABOVE_ZERO for k, v in levels.items()}
        t = replace(DEFAULT_THRESHOLDS[metric], **values)
        if not t.careful <= t.warning <= t.critical:
            raise ConfigError(f"{where}: careful ≤ warning ≤ critical does not hold "
                              f"({t.careful:g}, {t.warning:g}, {t.critical:g} with the defaults)")
        thresholds[metric] = t
    rules = StragglerRules()
    section = doc.get("straggler", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: straggler: must be a table")
    known = {f.name: f for f in fields(StragglerRules)}
    changes = {}
    for key, value in section.items():
        where = f"{source}: straggler.{key}"
        if key not in known:
            raise ConfigError(f"{where}: unknown setting (known: {', '.join(sorted(known))})")
        if known[key].type in ("bool", bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: must be true or false, not {value!r}")
            changes[key] = value
            continue
        number = _number(where, value)
        if known[key].type in ("int", int):
            if number != int(number) or number < 1:
                raise ConfigError(f"{where}: must be a whole number of at least 1, not {value!r}")
            number = int(number)
        changes[key] = number
    if changes:
        rules = replace(rules, **changes)
    if rules.flag_intervals > rules.window_intervals:
        raise ConfigError(f"{source}: straggler.flag_intervals: at most window_intervals "
                          f"({rules.flag_intervals} of {rules.window_intervals} intervals cannot happen)")
    return Config(thresholds, rules, health=_health(doc, source), path=source, mesh=mesh, mesh_said="mesh" in doc)


# [health]: each setting a whole number, at least this
_HEALTH_MINIMUM = {"retrans_min_segments": 0, "hold_intervals": 1}


def _health(doc: dict, source: str) -> HealthRules:
    section = doc.get("health", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: health: must be a table")
    changes = {}
    for key, value in section.items():
        where = f"{source}: health.{key}"
        if key not in _HEALTH_MINIMUM:
            raise ConfigError(f"{where}: unknown setting (known: {', '.join(sorted(_HEALTH_MINIMUM))})")
        least = _HEALTH_MINIMUM[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigError(f"{where}: must be a whole number of at least {least}, not {value!r}")
        changes[key] = value
    return replace(HealthRules(), **changes)
