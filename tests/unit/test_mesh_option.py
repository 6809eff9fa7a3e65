"""--mesh and config.toml's mesh: the option wins, the file decides without it, on otherwise;
only SSH nodes take part."""

from __future__ import annotations

import asyncio

import pytest

from netui.cli.settings import WatchSettings
from netui.cli.watch import build_monitor, build_parser
from netui.exits import InputError
from netui.model.mesh import MeshSettings


def monitor_of(tmp_path, argv, config_text=None):
    config = tmp_path / "config.toml"
    config.write_text(config_text or "")
    args = build_parser(None).parse_args([*argv, "--config", str(config), "198.18.0.1", "198.18.0.2"])
    monitor = build_monitor(WatchSettings.from_options(args), history_s=60)
    asyncio.run(monitor.close())
    return monitor


@pytest.mark.parametrize("argv, text, on", [
    ([], None, True),
    ([], 'mesh = "on"', True),
    ([], 'mesh = "off"', False),
    (["--mesh", "off"], 'mesh = "on"', False),
    (["--mesh", "on"], None, True),
    (["--mesh", "30"], 'mesh = "off"', True),
])
def test_the_option_wins_over_the_file_which_wins_over_on(tmp_path, argv, text, on):
    monitor = monitor_of(tmp_path, argv, text)
    assert (monitor.mesh is not None) == on
    if on:
        assert sorted(monitor.mesh.sources) == ["198.18.0.1", "198.18.0.2"]
        assert monitor.mesh.settings == (MeshSettings(rate=30.0, period_s=0.05) if "30" in argv else MeshSettings())


def test_a_bad_rate_is_said_with_the_option_named(tmp_path):
    with pytest.raises(InputError, match="--mesh: "):
        WatchSettings.from_options(build_parser(None).parse_args(["--mesh", "loud", "n1"]))


def test_the_mesh_is_on_by_default_up_to_a_fleet_size_and_said_otherwise_whatever_the_size():
    """On unless said, for a fleet of up to DEFAULT_MESH_NODES nodes; beyond, off unless --mesh
    or config.toml's mesh says so (its memory and first minute grow with the pairs)."""
    from types import SimpleNamespace

    from netui.cli.watch import mesh_for
    from netui.config import Config, parse_config
    from netui.model.mesh import DEFAULT_MESH_NODES, MeshSettings

    unsaid = SimpleNamespace(mesh_option=None, mesh=None)
    assert mesh_for(unsaid, Config(), DEFAULT_MESH_NODES) == MeshSettings()
    assert mesh_for(unsaid, Config(), DEFAULT_MESH_NODES + 1) is None
    assert mesh_for(unsaid, parse_config('mesh = "on"'), 4096) == MeshSettings()
    assert mesh_for(unsaid, parse_config('mesh = "off"'), 4) is None
    on = SimpleNamespace(mesh_option="on", mesh=MeshSettings())
    assert mesh_for(on, Config(), 4096) == MeshSettings()
    assert mesh_for(SimpleNamespace(mesh_option="off", mesh=None), Config(), 4) is None


def test_the_fleet_size_counts_the_nodes_that_would_probe_not_this_host(tmp_path):
    """This host watched locally (--local) takes no part in the mesh, so it does not count:
    DEFAULT_MESH_NODES SSH nodes and this host have the mesh on; one SSH node more, off."""
    from netui.model.mesh import DEFAULT_MESH_NODES

    (tmp_path / "config.toml").write_text("")

    def monitor(ssh_nodes):
        args = build_parser(None).parse_args(["--local", "--config", str(tmp_path / "config.toml"),
                                              f"n[1-{ssh_nodes}]"])
        monitor = build_monitor(WatchSettings.from_options(args), history_s=60)
        asyncio.run(monitor.close())
        return monitor

    at_most = monitor(DEFAULT_MESH_NODES)
    assert len(at_most.sources) == DEFAULT_MESH_NODES + 1
    assert at_most.mesh is not None and len(at_most.mesh.sources) == DEFAULT_MESH_NODES
    assert monitor(DEFAULT_MESH_NODES + 1).mesh is None
