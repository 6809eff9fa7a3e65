"""Recordings keep the fabric: fabric_to_dict / fabric_from_dict through real JSON."""

from __future__ import annotations

import json
from pathlib import Path

from netui.collectors.assemble import fabric_from_texts
from netui.collectors.infiniband import read_infiniband
from netui.engine.recording.codec import sample_from_dict, sample_to_dict
from netui.model.fabric import fabric_from_dict, fabric_to_dict
from netui.model.samples import NodeSample

SYNTH = Path(__file__).resolve().parents[1] / "data" / "fabric"


def synth_fabric(t: int):
    eth = {"enp1s0f0np0": (SYNTH / f"ethtool-S_mlx5_pfc_t{t}.txt").read_text()}
    return fabric_from_texts(read_infiniband(str(SYNTH / f"node-t{t}" / "sys")), eth, mono_s=100.0 + t,
                             ethtool_mono_s=99.5 + t, boot_id="b")


def test_every_field_survives_json():
    for t in (0, 1):  # wraps, saturation, "N/A (no PMA)", a port DOWN, GIDs, PFC on prio 3
        f = synth_fabric(t)
        assert f.ports and f.pfc and any(p.gid_types for p in f.ports.values())
        assert fabric_from_dict(json.loads(json.dumps(fabric_to_dict(f)))) == f


def test_a_recorded_sample_keeps_its_fabric_and_none_stays_none():
    s = NodeSample(wall_s=1.0, mono_s=100.0, boot_id="b", interfaces={}, fabric=synth_fabric(0))
    assert sample_from_dict(json.loads(json.dumps(sample_to_dict(s)))) == s
    bare = NodeSample(wall_s=1.0, mono_s=100.0, boot_id="b", interfaces={})
    d = json.loads(json.dumps(sample_to_dict(bare)))
    assert d["fabric"] is None and sample_from_dict(d) == bare
    del d["fabric"]  # a recording made before the fabric existed
    assert sample_from_dict(d) == bare
