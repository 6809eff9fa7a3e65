"""netui/model/text.py: what a string from a node, a file or a server looks like once it has
entered netui — nothing a terminal would obey, at most so long, names as they are."""

from __future__ import annotations

import json

import pytest

from netui.model.text import CUT, MESSAGE_CHARS, NAME_CHARS, is_safe, safe_line, safe_lines, safe_names, safe_text, safe_tree

C0 = [chr(c) for c in range(0x20)]
C1 = [chr(c) for c in range(0x80, 0xA0)]
DEL = "\x7f"
ESC = "\x1b"


def obeyed(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on: C0 (newline and tab included), DEL, C1."""
    return [c for c in text if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0]


@pytest.mark.parametrize("name", ["eth0", "enp65s0f0np0", "ib0.8001", "bond0.100@eth1", "lo", "wlp2s0",
                                  "nœud-é", "узел-1", "ノード", "br-4f2a", "host_1:22", "a b"])
def test_a_printable_name_is_kept_as_it_is(name):
    assert safe_text(name) is name
    assert is_safe(name)


@pytest.mark.parametrize("ch", C0 + [DEL] + C1)
def test_every_control_character_is_shown_as_its_escape(ch):
    cleaned = safe_text(f"eth{ch}0")
    assert obeyed(cleaned) == []
    assert cleaned == f"eth\\x{ord(ch):02x}0"
    assert not is_safe(f"eth{ch}0")


@pytest.mark.parametrize("sequence, shown", [
    ("\x1b[2J", "\\x1b[2J"),  # CSI: clear the screen
    ("\x1b[31;1m", "\\x1b[31;1m"),  # CSI: colour
    ("\x9b2J", "\\x9b2J"),  # CSI as the C1 control
    ("\x1b]0;HACKED\x07", "\\x1b]0;HACKED\\x07"),  # OSC 0 (window title), BEL-terminated
    ("\x1b]52;c;SEFDS0VE\x1b\\", "\\x1b]52;c;SEFDS0VE\\x1b\\"),  # OSC 52 (clipboard), ST-terminated
    ("\x9d52;c;SEFDS0VE\x9c", "\\x9d52;c;SEFDS0VE\\x9c"),  # OSC and ST as C1 controls
    ("\x1bP1$r0m\x1b\\", "\\x1bP1$r0m\\x1b\\"),  # DCS
    ("\x90q#0;2;0;0;0\x9c", "\\x90q#0;2;0;0;0\\x9c"),  # DCS as C1 (sixel)
    ("\x1b_apc\x1b\\", "\\x1b_apc\\x1b\\"),  # APC
    ("\x1bc", "\\x1bc"),  # a single ESC sequence: reset the terminal
    ("\x1b(0", "\\x1b(0"),  # designate a character set
    ("\x1b]52;c;unterminated", "\\x1b]52;c;unterminated"),  # an OSC never ended
    ("\x1b[", "\\x1b["),  # a CSI never ended
    ("\x1b", "\\x1b"),  # a lone ESC at the end
])
def test_escape_sequences_stay_visible_and_inert(sequence, shown):
    cleaned = safe_text(f"eth0{sequence}", 1000)
    assert cleaned == f"eth0{shown}"
    assert obeyed(cleaned) == []


@pytest.mark.parametrize("ch", ["\u202e", "\u200b", "\u2028", "\u2029", "\udcff", "\ufeff", "\U000e0001", "\xa0"])
def test_characters_not_printed_as_themselves_are_escaped(ch):
    """Bidi overrides, zero-width and line separators, a lone surrogate (a file name that was
    not UTF-8, decoded with surrogateescape: printing it would raise), a tag character."""
    cleaned = safe_text(f"a{ch}b")
    assert cleaned.isprintable()
    assert cleaned.encode("utf-8")  # no surrogate left
    assert cleaned != f"a{ch}b"


def test_newlines_and_tabs_kept_only_in_a_text_meant_to_span_lines():
    text = "line 1\r\n\tline 2\nline 3\x1b[2J\r"
    assert safe_text(text, 1000, multiline=True) == "line 1\n\tline 2\nline 3\\x1b[2J\\x0d"
    assert safe_text(text, 1000) == "line 1\\x0d\\x0a\\x09line 2\\x0aline 3\\x1b[2J\\x0d"


def test_a_long_text_is_cut_with_a_visible_mark():
    assert safe_text("x" * 300) == "x" * (NAME_CHARS - 1) + CUT
    assert len(safe_text("x" * 10_000_000)) == NAME_CHARS
    assert safe_text("x" * NAME_CHARS) == "x" * NAME_CHARS  # at the limit: whole
    assert safe_text("abcdef", 4) == "abc" + CUT


def test_a_cut_never_splits_an_escape():
    cleaned = safe_text("ab" + ESC * 50, 10)
    assert cleaned == "ab\\x1b" + CUT  # "ab" + one escape (4) + mark: the next escape would not fit
    assert len(cleaned) <= 10
    assert obeyed(cleaned) == []
    # a long string of controls is cut after escaping, so it stays within the limit
    hostile = "".join(C0 + [DEL] + C1) * 100_000
    cleaned = safe_text(hostile)
    assert len(cleaned) <= NAME_CHARS and cleaned.endswith(CUT) and obeyed(cleaned) == []


def test_a_line_of_words_is_trimmed_and_capped_as_a_message():
    assert safe_line("  down: no route\n") == "down: no route"
    assert len(safe_line("e" * 5000)) == MESSAGE_CHARS


def test_json_carries_the_cleaned_value_back_as_it_was():
    name = safe_text("eth0\x1b]52;c;SEFDS0VE\x07\x9b2J")
    dumped = json.dumps({"name": name})
    assert ESC not in dumped and "\x9b" not in dumped
    assert json.loads(dumped)["name"] == name


def test_a_long_text_of_lines_keeps_every_line_and_escapes_only_the_bad_ones():
    good = "\n".join(f"/proc/sys/net/core/rmem_max:{i}\t{i}" for i in range(10_000))
    assert safe_lines(good) is good
    bad = good + "\nirq eth\x1b]52;c;SEFDS0VE\x07 45\r\n@end"
    cleaned = safe_lines(bad)
    assert cleaned.startswith(good) and cleaned.endswith("\nirq eth\\x1b]52;c;SEFDS0VE\\x07 45\n@end")
    assert obeyed(cleaned.replace("\n", "").replace("\t", "")) == []
    assert safe_text(good, 50, multiline=True) == good[:49] + CUT


def test_what_is_not_a_string_becomes_one():
    """A recording may hold a number where a reason should be: it is shown, never a crash."""
    assert safe_text(5) == "5" and safe_line(None) == "None"


def test_names_that_clean_to_one_stay_distinct():
    long = "x" * 300
    assert safe_names(["eth0", long + "a", long + "b"]) == ("eth0", "x" * 254 + CUT, "x" * 242 + CUT + "~2")
    assert safe_names(("eth0", "ib0.8001")) == ("eth0", "ib0.8001")


def test_interfaces_of_a_sample_are_shown_safely_and_stay_apart():
    """Every source's interface names meet in the model's layout (model/samples.py)."""
    from netui.model.samples import InterfaceCounters, InterfaceSample, NodeSample

    def counters() -> InterfaceCounters:
        return InterfaceCounters(*[0] * 16)

    names = ["eth\x1b[2J", "x" * 300 + "a", "x" * 300 + "b", "eth0"]
    sample = NodeSample(1.0, 1.0, None, {n: InterfaceSample(n, counters()) for n in names}, hostname="h\x9d0;t\x07",
                        problems=("bad \x1b]52;c;AA\x07",))
    assert sorted(sample.interfaces) == sorted(["eth\\x1b[2J", "x" * 254 + CUT, "x" * 242 + CUT + "~2", "eth0"])
    assert sample.interfaces["eth\\x1b[2J"].name == "eth\\x1b[2J"
    assert sample.hostname == "h\\x9d0;t\\x07" and sample.problems == ("bad \\x1b]52;c;AA\\x07",)


def test_a_document_read_back_has_every_string_made_safe():
    doc = {"a\x1b": ["x\x9b", {"k": "v\x07", "n": 5, "ok": True, "none": None}]}
    assert safe_tree(doc) == {"a\\x1b": ["x\\x9b", {"k": "v\\x07", "n": 5, "ok": True, "none": None}]}
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(ValueError):
        safe_tree(deep)


def test_many_names_cut_alike_are_numbered_in_one_pass():
    names = [f"{'x' * 300}{i}" for i in range(5_000)]
    shown = safe_names(names)
    assert len(set(shown)) == len(names) and shown[-1] == "x" * 242 + CUT + "~5000"
