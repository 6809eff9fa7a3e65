"""The options become typed settings once (netui/cli/settings.py): every node and source
option reaches SourceSettings, frozen, with seconds named as seconds; bad input below the
command line is an InputError that the command line says as ``netui: <reason>``."""

from __future__ import annotations

import dataclasses

import pytest

from netui.cli.options import common
from netui.cli.settings import SourceSettings, WatchSettings
from netui.cli.watch import build_parser

# option dest → SourceSettings field, where the field says its unit
RENAMED = {"connect_timeout": "connect_timeout_s", "scrape_timeout": "scrape_timeout_s"}


def test_every_common_option_reaches_the_source_settings():
    import argparse

    p = argparse.ArgumentParser()
    common(p)
    dests = {a.dest for a in p._actions} - {"help", "interval"}
    assert {RENAMED.get(d, d) for d in dests} == {f.name for f in dataclasses.fields(SourceSettings)}


def test_the_settings_are_typed_and_frozen():
    args = build_parser("snapshot").parse_args(
        ["gpu[1-2]", "-f", "hosts.txt", "-F", "cfg", "-i", "key", "--connect-timeout", "3", "-n", "0.5",
         "--source", "node-exporter", "--exporter-port", "9200", "--scrape-timeout", "2", "--config", "c.toml"])
    s = WatchSettings.from_options(args)
    assert s.interval_s == 0.5 and s.config_path == "c.toml" and s.history_s == WatchSettings.history_s
    src = s.sources
    assert src.hosts == ("gpu[1-2]",) and src.files == ("hosts.txt",) and src.names_nodes
    assert src.ssh_config == ("cfg",) and src.identity == ("key",)
    assert (src.connect_timeout_s, src.scrape_timeout_s, src.exporter_port) == (3.0, 2.0, 9200)
    assert src.source == "node-exporter" and src.slurm is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        src.hosts = ()  # type: ignore[misc]
    hash(s)  # frozen, and of tuples: usable as a key


def test_the_defaults_of_the_settings_are_the_options_defaults():
    assert WatchSettings.from_options(build_parser(None).parse_args([])) == WatchSettings()
    assert not SourceSettings().names_nodes
    assert SourceSettings(slurm=None).names_nodes  # --slurm without a job id: $SLURM_JOB_NODELIST


def test_bad_input_below_the_command_line_is_said_once_with_status_2(tmp_path):
    from netui.cli.sources import build_sources
    from netui.exits import InputError

    with pytest.raises(InputError, match="not a directory"):
        build_sources(SourceSettings(procfs=str(tmp_path / "absent")))
    from netui.cli import main

    with pytest.raises(SystemExit) as info:  # from the command line: on standard error, status 2
        main(["snapshot", "--procfs", str(tmp_path / "absent")])
    assert str(info.value) == f"netui: {tmp_path / 'absent'}: not a directory"
