"""The documentation holds together: the README stays a short page for users, and every
relative link in README.md, CONTRIBUTING.md, docs/*.md and tests/bench/README.md points to a
file that exists (and, with a #fragment, to a heading of that file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def doc_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "tests" / "bench" / "README.md"]
    return files + sorted((ROOT / "docs").glob("*.md"))


def relative_links(text: str) -> list[str]:
    """The link targets of a Markdown text that are not URLs, outside code blocks."""
    text = FENCE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to -."""
    text = re.sub(r"[`*]|\[|\]\([^)]*\)", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8")))}


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path.read_text(encoding="utf-8")):
        name, _, fragment = target.partition("#")
        dest = (path.parent / name).resolve() if name else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.name}")
    return broken


def test_the_readme_is_a_short_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; reference belongs in docs/"


def test_the_docs_exist():
    names = {p.name for p in doc_files() if p.exists()}
    assert {"README.md", "CONTRIBUTING.md", "troubleshooting.md", "json.md", "sources.md"} <= names


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_that_exists(path):
    assert broken_links(path) == []


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "there.md").write_text("# A heading\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#a-heading) [web](https://example.com)\n"
                    "`[not a link](nowhere.md)`\n```\n[nor this](nowhere.md)\n```\n"
                    "[gone](missing.md) [bad anchor](there.md#no-such) ![pic](missing.svg)\n")
    assert broken_links(page) == ["missing.md: no such file", "there.md#no-such: no heading #no-such in there.md",
                                  "missing.svg: no such file"]


def test_headings_become_github_anchors():
    assert slug("Pair tests: who is the short plank?") == "pair-tests-who-is-the-short-plank"
    assert slug("node_exporter in the lab") == "node_exporter-in-the-lab"
    assert slug("The `cpusum` field") == "the-cpusum-field"


SHELL_BLOCK = re.compile(r"^```(?:sh|bash|console)\n(.*?)^```", re.S | re.M)
WATCH_EXAMPLE = re.compile(r"^(?:\$ )?netui(?: (record|snapshot|replay))?((?: .*)?)$")
SUBCOMMANDS = ("export", "bench", "doctor", "topology")  # parsed by their own modules


def watch_examples(path: Path) -> list[tuple[str, str, list[str]]]:
    """(line, command, argv) of each ``netui``, ``netui record|snapshot|replay`` example in a
    shell block of ``path`` (its comment cut), those with placeholders (…, <…>) or a pipe left out."""
    import shlex

    out = []
    for block in SHELL_BLOCK.findall(path.read_text(encoding="utf-8")):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            m = WATCH_EXAMPLE.match(line)
            if not m or any(c in line for c in "…<|"):
                continue
            argv = shlex.split(m.group(2))
            if m.group(1) is None and argv and argv[0] in SUBCOMMANDS:
                continue
            out.append((line, m.group(1) or "watch", argv))
    return out


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_watch_record_snapshot_replay_example_parses(path, capsys):
    from netui.cli.watch import build_parser

    refused = []
    for line, command, argv in watch_examples(path):
        try:
            build_parser(command).parse_args(argv)
        except SystemExit:
            refused.append(f"{line}: {capsys.readouterr().err.strip().splitlines()[-1]}")
    assert not refused, refused


def test_an_example_that_does_not_parse_is_found(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("```sh\nnetui record run.ndjson.gz gpu[001-004]   # no -o\n"
                   "netui record -o run.ndjson.gz gpu[001-004]\n```\n", encoding="utf-8")
    examples = watch_examples(doc)
    assert [c for _, c, _ in examples] == ["record", "record"]
    from netui.cli.watch import build_parser

    with pytest.raises(SystemExit):
        build_parser("record").parse_args(examples[0][2])
    build_parser("record").parse_args(examples[1][2])
