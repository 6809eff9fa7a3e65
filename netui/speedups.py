"""The hot loops of parsing and rates: netui._speedups (C) when it was built, else their
pure-Python twins here, with the same results and the same errors.

``pip install`` builds the C module where a compiler is present; without one netui works
the same, only slower (about 5× on a 128-CPU node's sample). ``NETUI_PURE_PYTHON=1`` forces
the twins (the tests run both and compare them). See netui/_speedups.c for the contracts.
"""

from __future__ import annotations

import math
import os
import re
import struct
import sys
from array import array
from functools import lru_cache

NAN = float("nan")
_SPACE = " \t\r\x0b\x0c\x1c\x1d\x1e\x1f"  # str.split()'s ASCII whitespace, but the newline
_U64_MAX = (1 << 64) - 1


_HEX = frozenset("0123456789abcdefABCDEF")


def _number(token: str, base: int = 10) -> int:
    ok = token.isascii() and (token.isdigit() if base == 10 else bool(token) and set(token) <= _HEX)
    if not ok:
        raise ValueError("not an unsigned number")
    value = int(token, base)
    if value > _U64_MAX:
        raise ValueError("not an unsigned number")
    return value


_HEX_RE = re.compile("[0-9a-fA-F]+")
_SPACE_RE = re.compile("[ \t\r\x0b\x0c\x1c-\x1f]")
_DIGIT_RE = re.compile("[0-9]")


@lru_cache(maxsize=256)
def _kept_columns(keep: int | bytes, n: int) -> tuple[int, ...]:
    """The kept columns of a line of ``n`` numbers."""
    return tuple(c for c in range(n) if _kept(keep, c))


def _kept(keep: int | bytes, column: int) -> bool:
    if isinstance(keep, bytes):
        return column < len(keep) and keep[column] != 0
    return keep == -1 or (column < 64 and keep >> column & 1 == 1)


def py_parse_rows(text: str, sep: str, label_mode: int, width: int, base: int = 10, keep: int | bytes = -1,
                  limit: int = _U64_MAX, start: int = 0, stop: int = -1) -> tuple[object, int, bytes]:
    """Pure-Python twin of _speedups.parse_rows."""
    if not isinstance(keep, bytes) and keep != -1 and not 0 <= keep < 1 << 64:
        raise OverflowError("keep: not a mask of 64 columns")
    if label_mode not in (0, 1, 2):
        raise ValueError(f"label_mode {label_mode}")
    if base not in (10, 16):
        raise ValueError(f"base {base}")
    if len(sep) != 1:
        raise TypeError("sep must be one character")
    if not text.isascii():
        raise ValueError("line 0: not ASCII")
    if stop < 0:
        stop = len(text)
    if start < 0 or start > stop or stop > len(text) or (stop < len(text) and text[stop] != "\n"):
        raise ValueError(f"start {start}, stop {stop}: not a span of whole lines")
    text = text[start:stop]
    labels: list[str] = []
    ids: list[int] = []
    values: list[int] = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip(_SPACE):
            continue
        rest = line
        if label_mode:
            label, found, rest = line.lstrip(_SPACE).partition(sep)
            if not found:
                raise ValueError(f"line {line_no}: no label separator")
            label = label.strip(_SPACE)
            if _SPACE_RE.search(label):
                raise ValueError(f"line {line_no}: space inside the label")
            if label_mode == 1:
                labels.append(label)
            else:
                digits = len(label) - len(label.rstrip("0123456789"))
                name, number = label[: len(label) - digits], label[len(label) - digits :]
                if not digits or not name or _DIGIT_RE.search(name):
                    raise ValueError(f"line {line_no}: label is not a name and a number")
                try:
                    ids.append(_number(number))
                except ValueError:
                    raise ValueError(f"line {line_no}: label number out of range") from None
        tokens = rest.split()  # (ASCII: the same whitespace as C's, and no newline in a line)
        picked = tokens if keep == -1 else [tokens[c] for c in _kept_columns(keep, len(tokens))]
        joined = "".join(picked)
        if joined.isdigit() if base == 10 else _HEX_RE.fullmatch(joined) is not None:  # the common case
            numbers = list(map(int, picked)) if base == 10 else [int(t, 16) for t in picked]
            if max(numbers) <= limit:
                values.extend(numbers)
                if width < 0:
                    width = len(tokens)
                if len(tokens) != width:
                    raise ValueError(f"line {line_no}: {len(tokens)} numbers, expected {width}")
                continue
        count = 0  # something is wrong in this line: token by token, for the error C gives
        for token in tokens:
            if _kept(keep, count):
                try:
                    value = _number(token, base)
                except ValueError:
                    raise ValueError(f"line {line_no}: not an unsigned number") from None
                if value > limit:
                    raise ValueError(f"line {line_no}: a number above the limit")
                values.append(value)
            count += 1
        if width < 0:
            width = count
        if count != width:
            raise ValueError(f"line {line_no}: {count} numbers, expected {width}")
    lab: object = None
    if label_mode == 1:
        lab = labels
    elif label_mode == 2:
        lab = array("Q", ids).tobytes()
    return lab, max(width, 0), array("Q", values).tobytes()


def _check(*buffers) -> None:
    for b in buffers:
        if not (isinstance(b, array) and b.typecode in "QL" and b.itemsize == 8):
            raise TypeError("expected a buffer of unsigned 64-bit integers")
    _check_lengths(*buffers)


def _check_lengths(*buffers) -> None:
    if len({len(b) for b in buffers}) > 1:
        raise ValueError("buffers of different lengths")


def py_deltas(prev: array, cur: array, scale: float, wrap32: bool, ceiling=None) -> tuple[array, int]:
    """Pure-Python twin of _speedups.deltas."""
    if wrap32 and isinstance(prev, array) and prev.typecode == "I" and prev.itemsize == 4:
        if not (isinstance(cur, array) and cur.typecode == "I"):
            raise TypeError("expected a buffer of unsigned 32-bit integers")
        _check_lengths(prev, cur)
    else:
        _check(prev, cur)
    _check_lengths(prev, cur)
    if ceiling is not None and not isinstance(ceiling, (int, float)):
        if not (isinstance(ceiling, array) and ceiling.typecode == "d"):
            raise TypeError("expected a buffer of doubles")
        if len(ceiling) == 0 and len(cur) or len(ceiling) and len(cur) % len(ceiling):
            raise ValueError("ceilings do not divide the counters into rows")
    if wrap32:
        out = [(c - p) % (1 << 32) * scale for p, c in zip(prev, cur)]
    else:
        out = [(c - p) * scale if c >= p else NAN for p, c in zip(prev, cur)]
    if ceiling is None:
        pass
    elif isinstance(ceiling, (int, float)):
        top = float(ceiling)
        out = [NAN if v > top else v for v in out]
    elif ceiling:
        width = len(out) // len(ceiling)
        out = [NAN if v > ceiling[i // width] else v for i, v in enumerate(out)]
    return array("d", out), sum(map(math.isnan, out))


def py_share(part_prev: array, part_cur: array, whole_prev: array, whole_cur: array,
             scale: float) -> tuple[array, int]:
    """Pure-Python twin of _speedups.share."""
    _check(part_prev, part_cur, whole_prev, whole_cur)
    out = []
    for pp, pc, wp, wc in zip(part_prev, part_cur, whole_prev, whole_cur):
        if wc > wp and pc >= pp and pc - pp <= wc - wp:
            out.append((pc - pp) * scale / (wc - wp))
        else:
            out.append(NAN)
    return array("d", out), sum(map(math.isnan, out))


def _rate_code(value: float, ceiling: float) -> int:
    if not value >= 0:
        return 65535
    if value >= ceiling:
        return 65534
    return round(math.log2(1.0 + value) * 1500)


def py_rate_codes(values: array, stride: int, offsets: tuple[int, ...], ceiling: float) -> array:
    """Pure-Python twin of _speedups.rate_codes."""
    if not (isinstance(values, array) and values.typecode == "d"):
        raise TypeError("expected a buffer of doubles")
    if not isinstance(offsets, tuple):
        raise TypeError("offsets must be a tuple")
    if stride < 1 or len(values) % stride or len(offsets) > 16:
        raise ValueError("not rows of that stride")
    if any(not 0 <= o < stride for o in offsets):
        raise ValueError("offset outside the row")
    return array("H", [_rate_code(values[r + o], ceiling) for r in range(0, len(values), stride) for o in offsets])


def py_rate_row(buf: array, at: int, width: int, values: array, stride: int, offsets: tuple[int, ...],
                ceiling: float) -> None:
    """Pure-Python twin of _speedups.rate_row."""
    codes = py_rate_codes(values, stride, offsets, ceiling)
    if len(codes) != width:
        raise ValueError("rate_row: not width codes")
    if not (isinstance(buf, array) and buf.typecode == "H"):
        raise TypeError("expected a buffer of unsigned 16-bit integers")
    if not 0 <= at <= len(buf) - len(codes):
        raise ValueError("the row is outside the buffer")
    buf[at : at + len(codes)] = codes


def py_float_row(buf: array, at: int, values: tuple) -> None:
    """Pure-Python twin of _speedups.float_row."""
    if not isinstance(values, tuple):
        raise TypeError("values must be a tuple")
    if len(values) > 64:
        raise ValueError("float_row: at most 64 values")
    # (ldexp(v, 0) is v as a double, converted and refused as C's PyFloat_AsDouble does)
    row = array("f", [NAN if v is None else math.ldexp(v, 0) for v in values])
    if not (isinstance(buf, array) and buf.typecode == "f"):
        raise TypeError("expected a buffer of floats")
    if not 0 <= at <= len(buf) - len(row):
        raise ValueError("the row is outside the buffer")
    buf[at : at + len(row)] = row


def py_column_stats(values: array) -> tuple[float, float | None, int | None]:
    """Pure-Python twin of _speedups.column_stats."""
    if not (isinstance(values, array) and values.typecode == "d"):
        raise TypeError("expected a buffer of doubles")
    total = 0.0
    for v in values:
        total += v
    if not values:
        return total, None, None
    best = max(values)
    return total, best, values.index(best)


def py_iface_totals(flat: array, rows: array, link_rows: array, link_full: array) -> tuple:
    """Pure-Python twin of _speedups.iface_totals."""
    if not (isinstance(flat, array) and flat.typecode == "d" and len(flat) % 16 == 0):
        raise TypeError("expected rows of 16 doubles")
    _check(rows)
    _check(link_rows)
    if not (isinstance(link_full, array) and link_full.typecode == "d"):
        raise TypeError("expected a buffer of doubles")
    if len(link_full) != len(link_rows):
        raise ValueError("link rows and link speeds differ")
    nrows = len(flat) // 16
    rx = tx = drops = errs = drops_max = errs_max = 0.0
    for k, i in enumerate(rows):
        if i >= nrows:
            raise IndexError("row out of range")
        at = i * 16
        d, e = flat[at + 3] + flat[at + 11], flat[at + 2] + flat[at + 10]
        rx += flat[at]
        tx += flat[at + 8]
        drops += d
        errs += e
        drops_max = d if k == 0 or d > drops_max else drops_max
        errs_max = e if k == 0 or e > errs_max else errs_max
    link_max = None
    for k, i in enumerate(link_rows):
        if i >= nrows:
            raise IndexError("row out of range")
        at = i * 16
        link = (flat[at] if flat[at] > flat[at + 8] else flat[at + 8]) / link_full[k]
        link_max = link if k == 0 or link > link_max else link_max
    return rx, tx, drops, errs, drops_max, errs_max, None if link_max is None else link_max * 100


FIELD_KEY_MAX = 1024


def py_frame_fields(payload, limit: int = -1) -> dict[str, bytes]:
    """Pure-Python twin of _speedups.frame_fields."""
    data = bytes(memoryview(payload))
    out: dict[str, bytes] = {}
    pos, n, count = 0, len(data), 0
    while pos < n:
        if limit >= 0:
            if count >= limit:
                raise ValueError("too many fields")
            count += 1
        nul = data.find(b"\0", pos, pos + FIELD_KEY_MAX + 1)
        if nul <= pos:
            raise ValueError("not a field key")
        at = nul + 1
        if n - at < 4:
            raise ValueError("truncated field")
        size = int.from_bytes(data[at : at + 4], "little")
        at += 4
        if size > n - at:
            raise ValueError("truncated field")
        out[data[pos:nul].decode("utf-8", "replace")] = data[at : at + size]
        pos = at + size
    return out


_USUAL_KEYS = (b"wall", b"mono", b"netdev", b"cpusum", b"tcp", b"boot_id", b"hostname", b"ifsame")
_USUAL_MAYBE = (b"peers", b"mesh")
_USUAL_FLOAT = re.compile(rb"[0-9.]{1,63}")
_USUAL_SUMS = struct.Struct("<10Qd")  # (collectors/protocol.py CPUSUM)
_USUAL_STATE = "usual_frame: state must be (bytes, bytes, bytes, int, bytes, int, int)"


def _usual_count(value, least: int) -> int:
    if not isinstance(value, int):
        raise TypeError(_USUAL_STATE)
    if value > sys.maxsize:
        raise OverflowError("Python int too large to convert to C ssize_t")
    if value < least:
        raise ValueError("usual_frame: a count of the state out of range")
    return value


def _usual_values(value: bytes, head: bytes, count: int) -> bytes | None:
    """The ``count`` 8-byte values after ``head`` and a newline, when that is all ``value`` holds."""
    h = len(head)
    if len(value) - h - 1 != 8 * count or not value.startswith(head) or value[h : h + 1] != b"\n":
        return None
    return value[h + 1 :]


def _usual_array(typecode: str, raw: bytes) -> array:
    out = array(typecode)
    out.frombytes(raw)
    if sys.byteorder != "little":
        out.byteswap()
    return out


def py_usual_frame(payload, state: tuple, sums: type) -> tuple | None:
    """Pure-Python twin of _speedups.usual_frame."""
    if not isinstance(state, tuple) or len(state) != 7:
        raise TypeError(_USUAL_STATE)
    if not (isinstance(sums, type) and issubclass(sums, tuple)):
        raise TypeError("usual_frame: sums must be a subclass of tuple")
    boot, host, names = state[:3]
    if not (isinstance(boot, bytes) and isinstance(host, bytes) and isinstance(names, bytes)):
        raise TypeError(_USUAL_STATE)
    nnames = _usual_count(state[3], 1)
    if not isinstance(state[4], bytes):
        raise TypeError(_USUAL_STATE)
    tcp_names, ntcp, next_ = state[4], _usual_count(state[5], 1), _usual_count(state[6], 0)
    data = bytes(memoryview(payload))
    fields: dict[bytes, bytes] = {}
    pos, n = 0, len(data)
    while pos < n:
        nul = data.find(b"\0", pos, pos + FIELD_KEY_MAX + 1)
        if nul <= pos:
            return None
        at = nul + 1
        if n - at < 4:
            return None
        size = int.from_bytes(data[at : at + 4], "little")
        at += 4
        if size > n - at:
            return None
        key = data[pos:nul]
        if key in fields or (key not in _USUAL_KEYS and key not in _USUAL_MAYBE):  # another field, or one twice
            return None
        fields[key] = data[at : at + size]
        pos = at + size
    if any(k not in fields for k in _USUAL_KEYS):
        return None
    clocks = []
    for key in (b"wall", b"mono"):
        if _USUAL_FLOAT.fullmatch(fields[key]) is None:
            return None
        try:
            clocks.append(float(fields[key]))
        except ValueError:
            return None
    if fields[b"boot_id"] != boot or fields[b"hostname"] != host:
        return None
    flat = _usual_values(fields[b"netdev"], names, 16 * nnames)
    counters = _usual_values(fields[b"tcp"], tcp_names, ntcp + next_)
    if flat is None or counters is None or len(fields[b"cpusum"]) != _USUAL_SUMS.size:
        return None
    values = _USUAL_SUMS.unpack(fields[b"cpusum"])
    if values[0] != 15 or values[9] == 0 or values[8] > values[9]:
        return None
    return (clocks[0], clocks[1], _usual_array("Q", flat), _usual_array("q", counters[: 8 * ntcp]),
            _usual_array("Q", counters[8 * ntcp :]), tuple.__new__(sums, values[1:]), fields.get(b"peers"),
            fields.get(b"mesh"))


def py_positive(values: array) -> tuple[int, ...]:
    """Pure-Python twin of _speedups.positive."""
    if not (isinstance(values, array) and values.typecode == "d"):
        raise TypeError("expected a buffer of doubles")
    return tuple(i for i, v in enumerate(values) if v > 0)


def py_columns(values: array, width: int, ncols: int) -> bytes:
    """Pure-Python twin of _speedups.columns."""
    _check(values)
    if width < 1 or ncols < 0 or ncols > width or len(values) % width:
        raise ValueError("not rows of that width")
    cols = [values[c::width] for c in range(ncols)]
    rows = len(values) // width
    sums = [sum(values[r * width : r * width + ncols]) % (1 << 64) for r in range(rows)]
    out = array("Q")
    for col in cols:
        out.extend(col)
    out.extend(sums)
    return out.tobytes()


def py_peak_sum(buf: array, width: int, capacity: int, count: int, last: int, i: int, j: int) -> float | None:
    """Pure-Python twin of _speedups.peak_sum."""
    if not isinstance(buf, array) or buf.typecode != "f":
        raise TypeError("expected a buffer of floats")
    if (width < 1 or capacity < 1 or count < 0 or not 0 <= i < width or not 0 <= j < width
            or len(buf) != capacity * width):
        raise ValueError("peak_sum: not a ring of capacity x width floats")
    n = min(last, count, capacity)
    if n <= 0:
        return None
    end = (count % capacity) or capacity  # the physical row after the newest
    start = end - n
    if start >= 0:
        raw = buf[start * width : end * width].tolist()
    else:
        raw = buf[(capacity + start) * width :].tolist() + buf[: end * width].tolist()
    xs, ys = raw[i::width], raw[j::width]
    if not any(map(math.isnan, xs)) and not any(map(math.isnan, ys)):  # the common case
        return max(map(lambda a, b: a + b, xs, ys))
    peak = None
    for x, y in zip(xs, ys):
        if x != x:  # NaN: unknown
            if y != y:
                continue
            v = y
        else:
            v = x if y != y else x + y
        if peak is None or v > peak:
            peak = v
    return peak


_MESH_ROW = struct.Struct("<B3x16sHHHH")  # (collectors/protocol.py MESH_ROW)
_new_tuple = tuple.__new__


def py_mesh_rows(value, start: int, rows: int, max_rtts: int, texts: dict, reading: type) -> tuple | None:
    """Pure-Python twin of _speedups.mesh_rows."""
    if not isinstance(texts, dict):
        raise TypeError("mesh_rows: texts must be a dict")
    if not (isinstance(reading, type) and issubclass(reading, tuple)):
        raise TypeError("mesh_rows: reading must be a subclass of tuple")
    if start < 0 or rows < 0:
        raise ValueError("mesh_rows: negative start or rows")
    data = bytes(memoryview(value))
    size, at, out = len(data), start, []
    row_size = _MESH_ROW.size
    for _ in range(rows):
        if at > size - row_size:
            raise ValueError("mesh: cut inside a peer's row")
        family, raw, port, answered, lost, listed = _MESH_ROW.unpack_from(data, at)
        at += row_size
        if listed and (listed > answered or listed > max_rtts or listed * 4 > size - at):
            raise ValueError(f"mesh: {listed} RTTs listed for {answered} answers")
        address = texts.get(bytes((family,)) + raw)
        if address is None:
            return None
        rtts = struct.unpack_from(f"<{listed}I", data, at)
        at += 4 * listed
        out.append(_new_tuple(reading, (address, port, answered, lost, rtts)))
    if at != size:
        raise ValueError(f"mesh: {size - at} bytes after its last row")
    return tuple(out)


def _pool_one(a: int, b: int, n: int, row: list, probes: list, alive, node_probes: list, sums_of: list,
              sa: list | None, leaf_row: list, leaf_ix: list, acc: dict | None = None) -> tuple[int, int]:
    """Pair (a, b)'s ``n`` more probes, none lost, pooled: (total, pairs) for the caller's ``a``.
    With ``acc``, leaf_row[k][0] and sums_of[a][2] are added up there (as put_frame's C;
    ``_put_frame_end`` writes them), else written now."""
    old = row[b]
    now = row[b] = old + n
    if alive is not None and not alive[b]:
        return 0, 0
    node_probes[b] += n
    k = leaf_ix[b]
    if acc is None:
        leaf_row[k][0] += n
    else:  # (nothing written: checked as the C checks)
        if not isinstance(leaf_row[k], list):
            raise TypeError("expected PairIndex's tables (lists)")
        k = k if k >= 0 else k + len(leaf_row)
        acc[k] = acc.get(k, 0) + n
    if old and now:
        return n, 0
    born = 1 if now else -1
    sb = sums_of[b]
    if acc is not None and not isinstance(sb, list):
        raise TypeError("expected PairIndex's tables (lists)")
    sb[1] += born
    if not probes[b][a]:
        if acc is None:
            sa[2] += born  # type: ignore[index]
        else:
            acc["sa2"] = acc.get("sa2", 0) + born
        sb[2] += born
    return n, born


def _tables(probes, node_probes, sums_of, leaf_row, leaf_ix, alive, a: int) -> tuple[list, list]:
    if not all(isinstance(t, list) for t in (probes, sums_of, leaf_row, leaf_ix)) \
            or not (alive is None or isinstance(alive, list)) \
            or not (isinstance(node_probes, list) or isinstance(node_probes, array) and node_probes.typecode == "q"):
        raise TypeError("expected PairIndex's tables (lists)")
    row, sa = probes[a], sums_of[a]
    if not (isinstance(row, list) and isinstance(sa, list)):
        raise TypeError("expected PairIndex's tables (lists)")
    return row, sa


def py_pool_entries(entries: array, at: int, sign: int, a: int, probes: list, alive: list, node_probes: list,
                    sums_of: list, leaf_row: list, leaf_ix: list) -> tuple[int, int, int]:
    """Pure-Python twin of _speedups.pool_entries."""
    row, sa = _tables(probes, node_probes, sums_of, leaf_row, leaf_ix, alive, a)
    if not (isinstance(entries, array) and entries.typecode == "I"):
        raise TypeError("expected a buffer of unsigned 32-bit integers")
    n = len(entries)
    if n % 3 or at < 0 or at % 3 or at > n:
        raise ValueError("pool_entries: not whole readings from a reading on")
    total = pairs = 0
    while at < n:
        b, answered, lost = entries[at], entries[at + 1], entries[at + 2]
        if lost:
            break  # a lost probe: the caller's
        t, p = _pool_one(a, b, sign * answered, row, probes, alive, node_probes, sums_of, sa, leaf_row, leaf_ix)
        total, pairs, at = total + t, pairs + p, at + 3
    return at, total, pairs


_LONG = range(-(1 << 63), 1 << 63)


def py_pool_readings(readings, targets: list, ids: dict, at: int, a: int, heard, probes: list, node_probes: list,
                     sums_of: list, leaf_row: list, leaf_ix: list, kept: dict, min_probes: int, highest: int,
                     added: list) -> tuple[int, int, int, int]:
    """Pure-Python twin of _speedups.pool_readings."""
    if not (isinstance(targets, list) and isinstance(ids, dict) and isinstance(kept, dict)
            and isinstance(added, list) and isinstance(readings, (list, tuple))):
        raise TypeError("pool_readings: expected lists of readings and targets, dicts, a list")
    row, sa = _tables(probes, node_probes, sums_of, leaf_row, leaf_ix, None, a)
    heard = memoryview(heard).cast("B")
    total = pairs = 0
    n = min(len(readings), len(targets))
    at = n if at < 0 else at
    while at < n:
        r, b = readings[at], ids.get(targets[at])
        if not (isinstance(r, tuple) and len(r) == 5 and type(b) is int):
            break
        _, _, answered, lost, rtts = r
        if not (type(answered) is int and type(lost) is int and isinstance(rtts, tuple)):
            break
        if b not in _LONG or answered not in _LONG or lost not in _LONG:
            break  # (beyond a C long: the caller's)
        if b == a:
            at += 1
            continue
        if lost or b < 0 or b >= len(heard):
            break
        if not answered:
            at += 1
            continue  # (no probe: passed by)
        if heard[b] != 255 or row[b] + answered >= min_probes or (kept and b in kept):
            break
        if not all(type(t) is int and t in _LONG for t in rtts):
            break  # (RTTs not ints of a C long: the caller's)
        t, p = _pool_one(a, b, answered, row, probes, None, node_probes, sums_of, sa, leaf_row, leaf_ix)
        total, pairs = total + t, pairs + p
        for rtt in rtts:
            if rtt > highest:
                highest = rtt
        added += (b, answered, 0)
        at += 1
    return at, total, pairs, highest


_MAPPED = bytes(10) + b"\xff\xff"


def _row_end(data: bytes, at: int, max_rtts: int) -> int:
    if at > len(data) - _MESH_ROW.size:
        raise ValueError("mesh: cut inside a peer's row")
    _, _, _, answered, _, listed = _MESH_ROW.unpack_from(data, at)
    at += _MESH_ROW.size
    if listed and (listed > answered or listed > max_rtts or listed * 4 > len(data) - at):
        raise ValueError(f"mesh: {listed} RTTs listed for {answered} answers")
    return at + 4 * listed


def py_mesh_check(value, start: int, rows: int, max_rtts: int) -> None:
    """Pure-Python twin of _speedups.mesh_check."""
    if start < 0 or rows < 0:
        raise ValueError("mesh_check: negative start or rows")
    data = bytes(memoryview(value))
    at = start
    for _ in range(rows):
        end = _row_end(data, at, max_rtts)
        if data[at] not in (2, 10):
            raise ValueError(f"mesh: address family {data[at]}")
        at = end
    if at != len(data):
        raise ValueError(f"mesh: {len(data) - at} bytes after its last row")


def endpoint_key(family: int, raw: bytes) -> bytes:
    """A mesh row's peer's address as _speedups.mesh_targets keys it: 17 bytes (ValueError for
    a family neither 2 nor 10)."""
    if family == 2 or (family == 10 and raw[:12] == _MAPPED):
        return b"\x04" + bytes(12) + (raw[:4] if family == 2 else raw[12:16])
    if family == 10:
        return b"\x06" + raw[:16]
    raise ValueError(f"mesh: address family {family}")


def py_mesh_targets(value, start: int, rows: int, at_port: list) -> tuple[array, list | None]:
    """Pure-Python twin of _speedups.mesh_targets."""
    if not isinstance(at_port, list) or len(at_port) != 65536:
        raise TypeError("mesh_targets: at_port must be a list of 65536")
    if start < 0 or rows < 0:
        raise ValueError("mesh_targets: negative start or rows")
    data = bytes(memoryview(value))
    if rows > len(data) // _MESH_ROW.size:
        raise ValueError("mesh: cut inside a peer's row")
    places, missing, at = array("i", bytes(8 * rows)), [], start
    for k in range(rows):
        end = _row_end(data, at, 1 << 31)
        family, raw, port, _, _, _ = _MESH_ROW.unpack_from(data, at)
        key, b = endpoint_key(family, raw), -2
        peers = at_port[port]
        if isinstance(peers, dict):
            number = peers.get(key)
            if type(number) is int and -1 <= number < 1 << 31:
                b = number
        elif isinstance(peers, tuple):
            for j in range(0, len(peers) - 1, 2):
                if isinstance(peers[j], bytes) and peers[j] == key:
                    number = peers[j + 1]
                    if type(number) is int and -1 <= number < 1 << 31:
                        b = number
                    break
        if b == -2:
            missing.append((k, port, key))
        places[2 * k], places[2 * k + 1] = b, at
        at = end
    return places, missing or None


def py_pool_rows(value, places: array, at: int, a: int, heard, probes: list, node_probes: list, sums_of: list,
                 leaf_row: list, leaf_ix: list, kept: dict, min_probes: int, highest: int
                 ) -> tuple[int, int, int, int, bytes]:
    """Pure-Python twin of _speedups.pool_rows."""
    if not isinstance(kept, dict):
        raise TypeError("pool_rows: kept must be a dict")
    row, sa = _tables(probes, node_probes, sums_of, leaf_row, leaf_ix, None, a)
    if not (isinstance(places, array) and places.typecode == "i"):
        raise TypeError("pool_rows: places must be an array of 'i'")
    data, heard = bytes(memoryview(value)), memoryview(heard).cast("B")
    n, total, pairs, entries = len(places) // 2, 0, 0, array("I")
    at = n if at < 0 else at
    while at < n:
        b, off = places[2 * at], places[2 * at + 1]
        if b == -1 or b == a:
            at += 1
            continue
        if b < 0 or b >= len(heard) or off < 0 or off > len(data) - _MESH_ROW.size:
            break
        _, _, _, answered, lost, listed = _MESH_ROW.unpack_from(data, off)
        if lost or listed * 4 > len(data) - off - _MESH_ROW.size:
            break
        if not answered:
            at += 1
            continue
        if heard[b] != 255 or row[b] + answered >= min_probes or (kept and b in kept):
            break
        rtts = struct.unpack_from(f"<{listed}I", data, off + _MESH_ROW.size)
        t, p = _pool_one(a, b, answered, row, probes, None, node_probes, sums_of, sa, leaf_row, leaf_ix)
        total, pairs = total + t, pairs + p
        highest = max(highest, *rtts) if rtts else highest
        entries += array("I", (b, answered, 0))
        at += 1
    return at, total, pairs, highest, entries.tobytes()


def _put_frame_end(acc: dict, leaf_row: list, sa: list, node_probes: list, sums: list, a: int, total: int,
                   pairs: int) -> None:
    sa2 = acc.pop("sa2", 0)
    for k, d in acc.items():
        if d:
            leaf_row[k][0] += d
    if sa2:
        sa[2] += sa2
    if total:
        node_probes[a] += total
        sums[0] += total
    if pairs:
        sa[1] += pairs


def py_put_frame(frames, since, mono_s, value, places: array, a: int, heard, probes: list, alive: list,
                 node_probes: list, sums_of: list, sums: list, tops: dict, leaf_row: list, leaf_ix: list,
                 min_probes: int) -> tuple[int, int]:
    """Pure-Python twin of _speedups.put_frame."""
    if not (isinstance(tops, dict) and isinstance(sums, list)):
        raise TypeError("put_frame: tops must be a dict, sums a list")
    row, sa = _tables(probes, node_probes, sums_of, leaf_row, leaf_ix, alive, a)
    acc: dict = {}
    total = pairs = 0
    while len(frames):  # its frames of ``since`` or before leave, up to one that lost a probe
        frame = frames[0]
        if not (isinstance(frame, list) and len(frame) == 3):
            raise TypeError("put_frame: a frame must be a list [mono_s, entries, highest]")
        if not frame[0] <= since:
            break
        entries = frame[1]
        if not (isinstance(entries, array) and entries.typecode == "I"):
            raise TypeError("expected a buffer of unsigned 32-bit integers")
        if len(entries) % 3:
            raise ValueError("put_frame: entries not whole readings")
        if any(entries[2::3]):
            _put_frame_end(acc, leaf_row, sa, node_probes, sums, a, total, pairs)
            return -1, pairs
        highest = frame[2]
        frames.popleft()
        top = tops.get(a)
        if top is not None:
            if not isinstance(top, list):
                raise TypeError("put_frame: tops must hold lists [highest, count]")
            if highest and highest == top[0]:
                top[1] -= 1
                if not top[1]:
                    del tops[a]
        for j in range(0, len(entries), 3):
            t, p = _pool_one(a, entries[j], -entries[j + 1], row, probes, alive, node_probes, sums_of, None,
                             leaf_row, leaf_ix, acc)
            total, pairs = total + t, pairs + p
    frame = frames[-1] if len(frames) else None  # the frame of ``mono_s``: its common rows in
    if frame is not None:
        if not (isinstance(frame, list) and len(frame) == 3):
            raise TypeError("put_frame: a frame must be a list [mono_s, entries, highest]")
        if not frame[0] == mono_s:
            frame = None
    if not (isinstance(places, array) and places.typecode == "i"):
        raise TypeError("put_frame: places must be an array of 'i'")
    data, heard = bytes(memoryview(value)), memoryview(heard).cast("B")
    n, added = len(places) // 2, array("I")
    highest = was = 0 if frame is None else frame[2]
    at = 0
    while at < n:
        b, off = places[2 * at], places[2 * at + 1]
        if b == -1 or b == a:
            at += 1
            continue
        if b < 0 or b >= len(heard) or off < 0 or off > len(data) - _MESH_ROW.size:
            break
        _, _, _, answered, lost, listed = _MESH_ROW.unpack_from(data, off)
        if lost or listed * 4 > len(data) - off - _MESH_ROW.size:
            break
        if not answered:
            at += 1
            continue
        if heard[b] != 255 or row[b] + answered >= min_probes:
            break
        rtts = struct.unpack_from(f"<{listed}I", data, off + _MESH_ROW.size)
        t, p = _pool_one(a, b, answered, row, probes, None, node_probes, sums_of, None, leaf_row, leaf_ix, acc)
        total, pairs = total + t, pairs + p
        highest = max(highest, *rtts) if rtts else highest
        added += array("I", (b, answered, 0))
        at += 1
    if frame is None:
        frame = [mono_s, added, 0]
        frames.append(frame)
    elif added:
        frame[1].frombytes(added.tobytes())
    if highest > was:
        top = tops.get(a)
        if top is not None:
            if not isinstance(top, list):
                raise TypeError("put_frame: tops must hold lists [highest, count]")
            if highest > top[0]:
                top[0], top[1] = highest, 1
            elif highest == top[0]:
                top[1] += 1
        frame[2] = highest
    _put_frame_end(acc, leaf_row, sa, node_probes, sums, a, total, pairs)
    return at, pairs


# the "peers" field's structs (collectors/protocol.py's PEER_HEAD and PEER_ROW: this module imports
# nothing of netui's)
_PEER_HEAD = struct.Struct("<BBHIIIId")
_PEER_ROW = struct.Struct("<B3xI16sQQQQII")
_PEER_ADDR_SIZE = 20
_PEER_KEY_SIZE = 17


def py_peer_like(value, keys: bytes, tail: bytes, addresses: tuple, counters: type) -> tuple | None:
    """Pure-Python twin of _speedups.peer_like."""
    if not (isinstance(keys, bytes) and isinstance(tail, bytes) and isinstance(addresses, tuple)):
        raise TypeError("peer_like: keys and tail must be bytes, addresses a tuple")
    if not (isinstance(counters, type) and issubclass(counters, tuple)):
        raise TypeError("peer_like: counters must be a subclass of tuple")
    rows = len(addresses)
    if len(keys) != rows * _PEER_KEY_SIZE:
        raise ValueError("peer_like: keys must be 17 bytes an address")
    value = memoryview(value).cast("B")
    head = _PEER_HEAD.size
    at = head + rows * _PEER_ROW.size
    if len(value) != at + len(tail):
        return None
    status, flags, _, sockets, seen, n, addrs, mono = _PEER_HEAD.unpack_from(value)
    if status != 0 or n != rows or addrs * _PEER_ADDR_SIZE != len(tail) or value[at:] != tail or mono != mono:
        return None
    peers = []
    for i, (family, count, raw, *rest) in enumerate(_PEER_ROW.iter_unpack(value[head:at])):
        key = bytes((family,)) + raw
        j = i
        if keys[j * _PEER_KEY_SIZE:(j + 1) * _PEER_KEY_SIZE] != key:
            j = next((j for j in range(rows) if keys[j * _PEER_KEY_SIZE:(j + 1) * _PEER_KEY_SIZE] == key), -1)
            if j < 0:
                return None
        peers.append(tuple.__new__(counters, (addresses[j], count, *rest)))
    return flags, sockets, seen, mono, tuple(peers)


_MAX_BYTES_PER_S = 1e12  # model/flows.py MAX_BYTES_PER_S
_MAX_RTT_US = 600.0 * 1e6  # model/flows.py _MAX_RTT_US


def py_peer_rates(before: tuple, peers: tuple, dt: float, positional: bool, counters: type,
                  rates_type: type) -> tuple[dict, bool, bool]:
    """Pure-Python twin of _speedups.peer_rates (never None: it reads whatever the C leaves)."""
    if not (isinstance(counters, type) and isinstance(rates_type, type) and issubclass(rates_type, tuple)):
        raise TypeError("peer_rates: counters must be a type, rates a subclass of tuple")
    known = len(before)
    # (the previous reading's peers are matched by position — the sampler sends a node's
    # peers in much the same order every reading — where their addresses are known to be
    # distinct, else by address, the last row of an address as a dict keeps it)
    by_address = None if positional else {p[0]: p for p in before}
    rates: dict = {}
    ordered = True  # busiest first already (the sampler's order, mostly)
    top = math.inf
    rows = 0
    new = tuple.__new__
    for address, sockets, sent, received, retrans, delivery, rtt, _ in peers:
        if by_address is None:
            b = before[rows] if rows < known else None
            if b is None or b[0] != address:
                by_address = {p[0]: p for p in before}
                b = by_address.get(address)
        else:
            b = by_address.get(address)
        rows += 1
        if b is None:
            tx = rx = retrans_per_s = None
            total = 0.0
        else:
            d = sent - b[2]
            tx = d / dt if d >= 0 else None
            if tx is not None and tx > _MAX_BYTES_PER_S:
                tx = None
            d = received - b[3]
            rx = d / dt if d >= 0 else None
            if rx is not None and rx > _MAX_BYTES_PER_S:
                rx = None
            d = retrans - b[4]
            retrans_per_s = d / dt if d >= 0 else None
            if retrans_per_s is not None and retrans_per_s > _MAX_BYTES_PER_S:
                retrans_per_s = None
            total = (tx or 0.0) + (rx or 0.0)  # (PeerRates.bytes_per_s)
        rates[address] = new(rates_type, (tx, rx, rtt / 1e6 if 0 < rtt <= _MAX_RTT_US else None, retrans_per_s,
                                          sockets, float(delivery) if 0 < delivery <= _MAX_BYTES_PER_S else None))
        if total > top:
            ordered = False
        top = total
    return rates, ordered, len(rates) == rows



def py_peer_names(rates: dict, owner: dict, self_name: str | None, names: frozenset | None) -> tuple[dict, bool] | None:
    """Pure-Python twin of _speedups.peer_names."""
    if not (type(rates) is dict and type(owner) is dict and (self_name is None or type(self_name) is str)
            and (names is None or type(names) is frozenset)):
        return None
    label = owner.get
    out: dict = {}
    ordered = True
    top = math.inf
    for address, r in rates.items():
        name = label(address, address)
        if type(name) is not str or not isinstance(r, tuple) or len(r) < 2:
            return None
        if name == self_name or (names is not None and name not in names):
            continue
        if name in out:  # (one peer at several addresses: merged by the caller)
            return None
        tx, rx = r[0], r[1]
        if not ((tx is None or type(tx) is float) and (rx is None or type(rx) is float)):
            return None
        out[name] = r
        total = (tx or 0.0) + (rx or 0.0)
        if total > top:
            ordered = False
        top = total
    return out, ordered


try:
    if os.environ.get("NETUI_PURE_PYTHON"):
        raise ImportError("NETUI_PURE_PYTHON is set")
    from netui._speedups import (column_stats, columns, deltas, frame_fields, iface_totals, mesh_check, mesh_rows,
                                 mesh_targets, parse_rows, peak_sum, peer_like, peer_names, peer_rates, pool_entries, pool_readings,
                                 pool_rows, positive, put_frame, rate_codes, share, usual_frame)
    from netui._speedups import float_row, rate_row

    COMPILED = True
except ImportError:
    parse_rows, deltas, share, columns, rate_codes = py_parse_rows, py_deltas, py_share, py_columns, py_rate_codes
    column_stats, iface_totals, positive, frame_fields = py_column_stats, py_iface_totals, py_positive, py_frame_fields
    peak_sum, mesh_rows, pool_entries, pool_readings = py_peak_sum, py_mesh_rows, py_pool_entries, py_pool_readings
    mesh_check, mesh_targets, pool_rows, put_frame = py_mesh_check, py_mesh_targets, py_pool_rows, py_put_frame
    float_row, rate_row = py_float_row, py_rate_row
    peer_like, peer_names, peer_rates = py_peer_like, py_peer_names, py_peer_rates
    usual_frame = py_usual_frame
    COMPILED = False


def u64s(raw: bytes) -> array:
    """Native u64 bytes as array('Q')."""
    out = array("Q")
    out.frombytes(raw)
    return out

