"""The configuration file: thresholds laid over the defaults; bad files said in words."""

from __future__ import annotations

import pytest

from netui.config import ConfigError, default_path, load_config, parse_config
from netui.model.health import DEFAULT_THRESHOLDS, Threshold

GOOD = """
# a cluster whose fabric pauses a little all the time
[thresholds]
drops_per_s = { careful = 5, warning = 500 }
softirq_percent = { warning = 70, critical = 95 }

[thresholds.pause_per_s]
careful = 100
warning = 10_000
critical = inf

[straggler]
min_nodes = 4
robust_z = 5.0
idle_floor_bytes_per_s = 2_500_000  # 20 Mbit/s of monitoring is still idle here
"""


def test_a_good_file_overrides_only_what_it_names(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(GOOD)
    c = load_config(str(path))
    assert c.thresholds == {
        "drops_per_s": Threshold(5, 500, DEFAULT_THRESHOLDS["drops_per_s"].critical),
        "softirq_percent": Threshold(DEFAULT_THRESHOLDS["softirq_percent"].careful, 70, 95),
        "pause_per_s": Threshold(100, 10_000, float("inf")),
    }
    assert c.straggler.min_nodes == 4 and c.straggler.robust_z == 5.0 and c.path == str(path)
    assert c.straggler.idle_floor_bytes_per_s == 2.5e6 and c.straggler.symmetric_ratio == 0.05  # the default


@pytest.mark.parametrize("text, message", [
    ("[thresholds]\ndrop_per_s = { careful = 1 }\n", "thresholds.drop_per_s: unknown metric (known: "),
    ("[thresholds]\ndrops_per_s = { carefull = 1 }\n", "thresholds.drops_per_s.carefull: unknown level"),
    ("[thresholds]\ndrops_per_s = { careful = 'lots' }\n", "thresholds.drops_per_s.careful: must be a number, not 'lots'"),
    ("[thresholds]\ndrops_per_s = { careful = -1 }\n", "thresholds.drops_per_s.careful: must be 0 or more"),
    ("[thresholds]\ndrops_per_s = { careful = true }\n", "thresholds.drops_per_s.careful: must be a number"),
    ("[thresholds]\ndrops_per_s = 3\n", "thresholds.drops_per_s: must be a table"),
    ("[thresholds]\ndrops_per_s = { careful = 1000 }\n", "thresholds.drops_per_s: careful ≤ warning ≤ critical"),
    ("[straggler]\nmin_nodes = 2.5\n", "straggler.min_nodes: must be a whole number"),
    ("[straggler]\nbusy_floor = 1\n", "straggler.busy_floor: unknown setting"),
    ("[straggler]\nvictims = 1\n", "straggler.victims: must be true or false, not 1"),
    ("[straggler]\nflag_intervals = 0\n", "straggler.flag_intervals: must be a whole number of at least 1"),
    ("[straggler]\nflag_intervals = 4\n", "straggler.flag_intervals: at most window_intervals (4 of 3 intervals"),
    ("[threshold]\n", "unknown section 'threshold'"),
    ("health = 3\n", "health: must be a table"),
    ("[health]\nhold = 3\n", "health.hold: unknown setting (known: hold_intervals, retrans_min_segments)"),
    ("[health]\nhold_intervals = 0\n", "health.hold_intervals: must be a whole number of at least 1, not 0"),
    ("[health]\nhold_intervals = 2.5\n", "health.hold_intervals: must be a whole number of at least 1"),
    ("[health]\nhold_intervals = true\n", "health.hold_intervals: must be a whole number"),
    ("[health]\nretrans_min_segments = -1\n", "health.retrans_min_segments: must be a whole number of at least 0"),
    ("[health]\nretrans_min_segments = 'many'\n", "health.retrans_min_segments: must be a whole number"),
    ("[thresholds\n", "not valid TOML"),
])
def test_bad_keys_and_values_name_the_key(text, message):
    with pytest.raises(ConfigError) as exc:
        parse_config(text, "/etc/x.toml")
    assert str(exc.value).startswith("/etc/x.toml: ") and message in str(exc.value)


def test_the_health_table_sets_the_floor_and_the_hold():
    from netui.model.health import HealthRules

    c = parse_config("[health]\nretrans_min_segments = 5000\nhold_intervals = 5\n", "x.toml")
    assert c.health == HealthRules(retrans_min_segments=5000, hold_intervals=5)
    assert parse_config("[health]\nhold_intervals = 1\n").health == HealthRules(hold_intervals=1)
    assert parse_config("").health == HealthRules() == HealthRules(1000, 3)


def test_a_missing_default_file_is_no_error_but_a_named_one_is(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_path() == tmp_path / "netui" / "config.toml"
    assert load_config().thresholds == {} and load_config().path is None
    (tmp_path / "netui").mkdir()
    (tmp_path / "netui" / "config.toml").write_text("[thresholds]\nerrors_per_s = { careful = 2 }\n")
    assert load_config().thresholds["errors_per_s"].careful == 2
    with pytest.raises(ConfigError, match="nope.toml: no such file"):
        load_config(str(tmp_path / "nope.toml"))


def test_the_documented_example_is_a_valid_config():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "health.md").read_text()
    block = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    c = parse_config(block, "docs/health.md")
    assert c.thresholds["pause_per_s"].careful == 100 and c.straggler.min_nodes == 4
    s = c.straggler  # the hold and the victim rule, as data
    assert (s.flag_intervals, s.window_intervals, s.clear_intervals, s.victims) == (2, 3, 3, True)


def test_the_hold_and_the_victim_rule_are_settings():
    s = parse_config("[straggler]\nflag_intervals = 1\nwindow_intervals = 1\nclear_intervals = 5\nvictims = false\n"
                     ).straggler
    assert (s.flag_intervals, s.window_intervals, s.clear_intervals, s.victims) == (1, 1, 5, False)


def test_a_level_of_zero_means_any_at_all_not_every_idle_node():
    from netui.config import parse_config
    from netui.model.health import Level

    t = parse_config("[thresholds]\ndrops_per_s = { careful = 0, warning = 5 }\n").thresholds["drops_per_s"]
    assert t.level(0.0) is Level.OK
    assert t.level(0.5) is Level.CAREFUL and t.level(5) is Level.WARNING


def test_the_mesh_is_turned_on_by_the_file_or_refused_with_the_key_named():
    from netui.model.mesh import DEFAULT_RATE, MeshSettings

    assert parse_config('mesh = "on"').mesh == MeshSettings()
    assert parse_config('mesh = "off"').mesh is None and parse_config("").mesh == MeshSettings()  # on by default
    assert parse_config("mesh = 40").mesh.rate == 40.0 != DEFAULT_RATE
    for bad in ('mesh = "loud"', "mesh = true", "mesh = 0.01", "mesh = [1]"):
        with pytest.raises(ConfigError, match="config.toml: mesh"):
            parse_config(bad)
