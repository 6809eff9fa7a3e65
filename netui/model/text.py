"""Text from a node, a file or a server, made safe to show: the one cleaner every entry uses.

A terminal obeys what it is sent: an interface named ``eth0\\x1b]52;c;…\\x07`` writes the
user's clipboard, ``\\x1b[2J`` clears the screen, a C1 ``\\x9b`` starts a sequence as ESC[
does. So every string that comes from outside netui (interface and host names, labels,
error texts, tool output, names in topology files) passes ``safe_text`` where it enters,
and what reaches the screen, a text report or a CSV file is plain printable text:

- each control character (C0 but a kept newline or tab, DEL, C1) and each other character
  a terminal does not print as itself (format characters such as bidi overrides, line and
  paragraph separators, lone surrogates, unassigned code points) is shown as its escape,
  ``\\x1b``, ``\\u202e``: an escape sequence stays visible, introducer and all
  (``\\x1b[2J``, ``\\x1b]0;title\\x07``), and the terminal takes it for text;
- the result is at most ``max_chars`` characters, a cut one ending in ``…``.

Printable text, letters of any script included (``eth0``, ``enp65s0f0np0``, ``ib0.8001``,
``nœud-é``), comes back as it is (the same object), so cleaning costs a check on the usual path.
"""

from __future__ import annotations

NAME_CHARS = 255  # a name: interface, host, switch, label value (DNS names are at most 253)
MESSAGE_CHARS = 500  # one line of words: an error, a tool's complaint, a state's reason
TEXT_CHARS = 8000  # a multi-line text kept for the user to read (a tool's diagnostic output)
CUT = "…"  # ends a text cut at its limit


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe_text(text: str, max_chars: int = NAME_CHARS, *, multiline: bool = False) -> str:
    """``text`` as netui shows it: every character that is not printable as itself replaced by
    its visible escape (``\\x1b``, ``\\x9b``, ``\\u2028``), at most ``max_chars`` characters (a
    cut text ends in ``…``). ``multiline``: newlines and tabs are kept (``\\r\\n`` becomes a
    newline), for texts meant to span lines; otherwise they are escaped too. Printable text
    within the limit is returned unchanged; anything else is first made a string (a number
    where a file should hold a name)."""
    if not isinstance(text, str):
        text = str(text)
    if text.isprintable() or (multiline and _printable_lines(text)):
        return text if len(text) <= max_chars else text[: max_chars - len(CUT)] + CUT
    if multiline and "\r\n" in text:
        text = text.replace("\r\n", "\n")
    keep = "\n\t" if multiline else ""
    # each character gives at least one: only the first max_chars + 1 can be shown
    out: list[str] = []
    n = 0
    for ch in text[: max_chars + 1]:
        piece = ch if ch.isprintable() or ch in keep else _escape(ch)
        if n + len(piece) > max_chars:
            break
        out.append(piece)
        n += len(piece)
    else:
        if len(text) <= max_chars:
            return "".join(out)
    # cut: make room for the mark (never in the middle of an escape)
    while out and n + len(CUT) > max_chars:
        n -= len(out.pop())
    return "".join(out) + CUT


def safe_lines(text: str) -> str:
    """A long text of lines that a parser reads whole (a probe's output): each line made safe
    as ``safe_text(multiline=True)`` makes it, none cut; printable lines cost one check."""
    if _printable_lines(text):
        return text
    return "\n".join(line if _printable_lines(line) else safe_text(line, 10 * len(line) + 1, multiline=True)
                     for line in text.replace("\r\n", "\n").split("\n"))


def _printable_lines(text: str) -> bool:
    return text.replace("\n", "").replace("\t", "").isprintable()


def safe_names(names) -> tuple[str, ...]:
    """Names (of interfaces, of nodes) as ``safe_text`` shows them, still distinct: two that
    clean to one (cut at the same length) are told apart by ``~2``, ``~3`` …."""
    out: list[str] = []
    seen: set[str] = set()
    last: dict[str, int] = {}  # a cut name → the last number given to it (linear, however many)
    for name in names:
        shown = safe_text(name)
        if shown in seen:
            base = safe_text(name, NAME_CHARS - 12)
            n = last.get(base, 1)
            while shown in seen:
                n += 1
                shown = f"{base}~{n}"
            last[base] = n
        seen.add(shown)
        out.append(shown)
    return tuple(out)


def safe_line(text: str, max_chars: int = MESSAGE_CHARS) -> str:
    """One line of words (an error, a reason): blanks at the ends trimmed, then ``safe_text``."""
    return safe_text((text if isinstance(text, str) else str(text)).strip(), max_chars)


def is_safe(text: str, max_chars: int = NAME_CHARS) -> bool:
    """Whether ``text`` is shown as it is (``safe_text`` would return it unchanged)."""
    return text.isprintable() and len(text) <= max_chars


def safe_fields(obj, multiline: tuple[str, ...] = (), max_chars: int = MESSAGE_CHARS) -> None:
    """Every text field of a (frozen) dataclass instance made safe in place: strings, and the
    strings in tuples of them (one level of nesting: pairs); the fields named in
    ``multiline`` keep their lines (at most TEXT_CHARS). For the results of parsers of a
    tool's output, called from their ``__post_init__``: a result is safe however it was built."""
    from dataclasses import fields

    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, str):
            new = safe_text(value, TEXT_CHARS, multiline=True) if f.name in multiline else safe_text(value, max_chars)
        elif isinstance(value, tuple) and value and any(isinstance(v, (str, tuple)) for v in value):
            new = tuple(_safe_item(v, max_chars) for v in value)
        else:
            continue
        if new != value:
            object.__setattr__(obj, f.name, new)


def _safe_item(value, max_chars: int):
    if isinstance(value, str):
        return safe_text(value, max_chars)
    if isinstance(value, tuple):
        return tuple(safe_text(v, max_chars) if isinstance(v, str) else v for v in value)
    return value


MAX_DEPTH = 64  # a report nests a few levels; more is not one of netui's documents


def safe_tree(obj, max_chars: int = MESSAGE_CHARS, _depth: int = 0):
    """A JSON document (read back from a file) with every string in it, keys too, made safe
    (``safe_text``); numbers, booleans and None as they are. ValueError when it nests deeper
    than MAX_DEPTH."""
    if isinstance(obj, str):
        return safe_text(obj, max_chars)
    if isinstance(obj, (dict, list)) and _depth >= MAX_DEPTH:
        raise ValueError(f"a document nested more than {MAX_DEPTH} deep")
    if isinstance(obj, dict):
        return {(safe_text(k, max_chars) if isinstance(k, str) else k): safe_tree(v, max_chars, _depth + 1)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [safe_tree(v, max_chars, _depth + 1) for v in obj]
    return obj
