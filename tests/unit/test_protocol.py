"""The sampler's wire protocol is declared once (collectors/protocol.py): the monitor's
parsers use the same objects, the node runs the same text, and that text still compiles
as the oldest python3 a node may have (3.6) would need (run under the oldest python3 here:
tests/integration/test_node_scripts.py)."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from netui.collectors import assemble, ethtool, frame_tables, frames, infiniband, protocol
from netui.collectors.ssh import PROTOCOL_IMPORT, SAMPLER_SOURCE, shipped_sampler_source

PACKAGE = Path(protocol.__file__).resolve().parents[1]
PROTOCOL_TEXT = Path(protocol.__file__).read_text(encoding="utf-8")


def literal_lists(path: Path):
    """Every literal tuple, list or set of two or more strings (or bytes) in a file, as a tuple of str."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) > 1:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(values) == len(node.elts) and all(isinstance(v, (str, bytes)) for v in values):
                yield tuple(v.decode() if isinstance(v, bytes) else v for v in values)


def files_declaring(names) -> list[str]:
    want = set(names)
    return sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                  if any(set(found) == want for found in literal_lists(p)))


@pytest.mark.slow
@pytest.mark.parametrize("names", [protocol.TCPEXT_FIELDS, protocol.IB_NAMES, protocol.PORT_ATTRS,
                                   protocol.IFACE_ATTRS], ids=["TcpExt", "IB_NAMES", "PORT_ATTRS", "IFACE_ATTRS"])
def test_each_list_of_the_protocol_is_written_once_in_the_package(names):
    assert files_declaring(names) == ["netui/collectors/protocol.py"]


def test_a_second_copy_of_a_list_would_be_found(tmp_path):
    copy = tmp_path / "copy.py"
    copy.write_text("X = frozenset((\n" + ",\n".join(repr(n.encode()) for n in sorted(protocol.TCPEXT_FIELDS)) + "))\n")
    assert any(set(found) == protocol.TCPEXT_FIELDS for found in literal_lists(copy))


def test_the_monitor_decodes_with_the_protocols_own_objects():
    assert assemble.TCPEXT_FIELDS is protocol.TCPEXT_FIELDS
    assert frames.IB_NAMES is protocol.IB_NAMES and frames.PORT_ATTRS is protocol.PORT_ATTRS
    assert infiniband.PORT_ATTRS is protocol.PORT_ATTRS
    assert assemble.PACKED_ATTRS is protocol.IFACE_FIELDS
    assert assemble.PROC_FILES is protocol.PROC_FILES
    assert frame_tables._CPUSUM is protocol.CPUSUM and frames.MAGIC is protocol.MAGIC
    assert ethtool.PER_QUEUE.pattern == protocol.PER_QUEUE_PATTERN


def test_the_node_runs_the_protocols_text_with_the_sampler():
    assert PROTOCOL_TEXT in SAMPLER_SOURCE and PROTOCOL_IMPORT not in SAMPLER_SOURCE
    assert "netui" not in "".join(line for line in SAMPLER_SOURCE.splitlines() if line.startswith(("import", "from")))
    ns: dict = {"__name__": "netui_sampler_under_test"}
    exec(compile(SAMPLER_SOURCE, "sampler.py", "exec"), ns)  # noqa: S102 - our own source
    assert ns["IB_NAMES"] == protocol.IB_NAMES and ns["PORT_ATTRS"] == protocol.PORT_ATTRS
    assert ns["TCPEXT"] == {n.encode() for n in protocol.TCPEXT_FIELDS}
    assert ns["CPUSUM"].format == protocol.CPUSUM.format
    assert ns["PROC"] == {key: "/proc/" + path for key, path in protocol.PROC_FILES.items()}  # the files read


def test_the_proc_files_are_named_once_in_the_package():
    for path in protocol.PROC_FILES.values():
        if "/" in path:  # (the one-word keys, "stat", are words of other meanings too)
            holders = sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                             if f'"/proc/{path}"' in p.read_text(encoding="utf-8")
                             or f': "{path}"' in p.read_text(encoding="utf-8"))
            assert holders == ["netui/collectors/protocol.py"], path


def test_a_sampler_without_its_protocol_line_is_not_shipped():
    with pytest.raises(ValueError, match="protocol"):
        shipped_sampler_source("import os\n", PROTOCOL_TEXT)


@pytest.mark.parametrize("text", [SAMPLER_SOURCE, PROTOCOL_TEXT], ids=["shipped", "protocol"])
def test_the_shipped_source_is_python_3_6_with_the_standard_library_only(text):
    tree = ast.parse(text, feature_version=(3, 6))  # walrus, positional-only, match... refused
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module != "__future__", ast.dump(node)  # (annotations: 3.7)
            imported.add(node.module.split(".")[0])
    assert imported and imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


