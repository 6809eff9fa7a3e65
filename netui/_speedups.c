/* netui._speedups: the hot loops of netui's /proc parsing and rates, in C.
 *
 * Optional: netui/speedups.py holds a pure-Python twin of every function here, with the
 * same results and the same errors, and uses it when this module was not built (no
 * compiler at install time). tests/unit/test_speedups.py checks the two agree, on the
 * real fixtures and on fuzzed text.
 *
 * parse_rows(text, sep, label_mode, width, base=10, keep=-1, limit=2**64-1, start=0, stop=-1)
 *         -> (labels, width, values)
 *     Lines of "[label<sep>] n n n ..." (ASCII; numbers are unsigned u64 in ``base``, 10 or
 *     16, digits only: no sign, no 0x).
 *     Blank lines are skipped. Every other line must hold exactly ``width`` numbers
 *     (width < 0: as many as the first line). label_mode 0: no label; 1: the label is the
 *     text before the first ``sep`` character, stripped (a list of str); 2: the same, but
 *     it must be letters followed by digits ("cpu12") and the digits are kept (bytes of
 *     native u64). ``values`` are bytes of native u64, row after row: of every number, or
 *     with ``keep`` a bit mask, of the numbers of the columns whose bit is set (0-63), or
 *     bytes, of the columns c where keep[c] is not 0; the
 *     other columns may then hold any token (they are counted, not read). A number above
 *     ``limit`` is an error. Only text[start:stop] is read (stop < 0: to the end); ``stop``
 *     must be the end or a newline.
 *     ValueError on anything else.
 *
 * deltas(prev, cur, scale, wrap32[, ceiling]) -> (array('d'), unknown)
 *     (cur[i] - prev[i]) * scale for two buffers of u64 of one length. A 64-bit counter
 *     that went backwards gives NaN (counted in ``unknown``); with wrap32 the difference is
 *     taken modulo 2**32 (counters the kernel keeps in 32 bits), and the buffers may also
 *     be two of u32 ('I'). A result above ``ceiling`` is NaN as well (counted): a float
 *     for every element, or a buffer of m doubles for n elements in m rows of n / m
 *     (ValueError unless m divides n), row r's elements against ceiling[r]. Without one:
 *     no ceiling.
 *
 * columns(values, width, ncols) -> bytes of u64
 *     Rows of ``width`` u64 turned into their first ``ncols`` columns, one after the other,
 *     followed by one more column: each row's sum of those (modulo 2**64).
 *
 * rate_codes(values, stride, offsets, ceiling) -> array('H')
 *     model.history.RateRing's 16-bit log-scale code of ``values[r * stride + o]`` for every
 *     row r and every o in ``offsets`` (at most 16), row after row.
 *
 * rate_row(buf, at, width, values, stride, offsets, ceiling) -> None
 *     rate_codes(values, stride, offsets, ceiling), which must be ``width`` codes, written
 *     into ``buf`` (a writable buffer of 'H') from item ``at`` on, nothing made: a history
 *     table's row. ValueError when they are not ``width`` or do not fit there.
 *
 * float_row(buf, at, values) -> None
 *     The numbers of the tuple ``values`` (at most 64; None: NaN) written as float32, as
 *     struct's native 'f' packs them, into ``buf`` (a writable buffer of 'f') from item
 *     ``at`` on. TypeError, and nothing written, when a value is neither a number nor None.
 *
 * column_stats(values) -> (sum, max, index)
 *     Of a buffer of doubles without NaN: the sum (left to right, as sum()), the largest
 *     value and the index of its first occurrence; (0.0, None, None) when empty.
 *
 * iface_totals(flat, rows, link_rows, link_full) -> (rx, tx, drops, errors, max drops,
 *                                                  max errors, max % of link or None)
 *     Over the rows (array 'Q') of a RatesTable's flat doubles (16 a row, no NaN): sums of
 *     RX and TX bytes/s, of drops (rx+tx) and errors (rx+tx) per second, the largest
 *     drops and errors of one row, and over ``link_rows`` the largest busier-direction
 *     bytes/s in % of ``link_full`` (array 'd', bytes/s at 100 %). Sums run in row order.
 *
 * positive(values) -> tuple of the indexes i where values[i] > 0 (a buffer of doubles)
 *
 * frame_fields(payload, limit=-1) -> dict
 *     The fields of a remote sampler frame's payload (a bytes-like object), one after the
 *     other: a key of 1 to 1,024 bytes without NUL, a NUL, the value's length as a 4-byte
 *     little-endian u32, the value. Keys are decoded as UTF-8 (errors replaced), values
 *     are bytes; a later key replaces an earlier one. ValueError ("not a field key",
 *     "truncated field") unless the payload ends where a field ends; ValueError ("too many
 *     fields") as soon as a field beyond the first ``limit`` begins (limit >= 0), so a
 *     payload of a million tiny fields costs ``limit`` fields of work, not a million.
 *
 * usual_frame(payload, state, sums) -> (wall, mono, flat, tcp, ext, cpu_sums, peers, mesh), or None
 *     A steady node's frame in one pass, without its dict of fields (collectors/frames.py
 *     FrameDecoder): the payload's fields, read as frame_fields reads them, must be wall, mono,
 *     netdev, cpusum, tcp, boot_id, hostname and ifsame, each once, and maybe peers and mesh
 *     (each once), nothing else; ``state`` (bytes, bytes, bytes, int, bytes, int, int) says
 *     what the frame before held: boot_id and hostname must be those bytes; netdev its names
 *     line (state[2]), a newline and 16 * state[3] u64; tcp its two names lines (state[4]),
 *     a newline, state[5] i64 and state[6] u64; cpusum 88 bytes of mask 15 (every sum, a
 *     hottest CPU of 0 <= softirq <= total ticks, total > 0); wall and mono 1 to 63 of 0-9
 *     and '.' that make a float. Then: wall and mono as float() reads them, the counters as
 *     array('Q') (netdev, TcpExt) and array('q') (Tcp), ``cpu_sums`` an instance of ``sums``
 *     (a subclass of tuple, made as tuple.__new__ makes it) of the sums after the mask, the
 *     peers and mesh fields' bytes (None: absent). None when anything differs: the caller's
 *     careful path reads the frame and says what is wrong. TypeError unless ``state`` is such
 *     a tuple and ``sums`` a subclass of tuple; ValueError for a count below 1 (below 0: the
 *     last).
 *
 * share(part_prev, part_cur, whole_prev, whole_cur, scale) -> (array('d'), unknown)
 *     d(part) / d(whole) * scale, NaN unless 0 <= d(part) <= d(whole) and d(whole) > 0.
 *
 * mesh_rows(value, start, rows, max_rtts, texts, reading) -> tuple, or None
 *     The ``rows`` peers' rows of a sampler's "mesh" field (docs/protocol.md#mesh) from
 *     value[start:] to its end: each a row of 28 bytes (u8 family, 3 bytes unread, 16 address
 *     bytes, then u16 port, answered, lost, listed, little-endian) and ``listed`` u32 RTTs.
 *     Each row becomes reading((address, port, answered, lost, (rtt, ...))), made as
 *     tuple.__new__ makes it (``reading``: a subclass of tuple; its __new__ is not called),
 *     ``address`` being texts[family byte + the 16 address bytes] (a bytes key of 17).
 *     None when a row's address is not in ``texts``, unless an earlier row was wrong: the
 *     caller puts its text there and asks again. ValueError, row after row: "mesh: cut
 *     inside a peer's row"; "mesh: L RTTs listed for A answers" (more than ``answered``,
 *     than ``max_rtts``, or cut short); after them "mesh: N bytes after its last row".
 *     TypeError unless ``texts`` is a dict and ``reading`` a subclass of tuple; ValueError
 *     ("mesh_rows: negative start or rows") for a negative start or rows.
 *
 * mesh_check(value, start, rows, max_rtts) -> None
 *     Checks the ``rows`` rows of a "mesh" field from value[start:] as mesh_rows reads them,
 *     with the same ValueErrors in the same order, and each row's address family: 2 (IPv4) or
 *     10 (IPv6), else ValueError "mesh: address family F" (after that row's RTTs are checked).
 *
 * mesh_targets(value, start, rows, at_port) -> (places, missing)
 *     Each of the ``rows`` rows' peer (value[start:] as mesh_check passed it) numbered by
 *     ``at_port``, a list of 65536: at_port[port] is None, a tuple (key, number, key, number,
 *     ...) of the peers on that port or a dict {key: number} of them, ``key`` the address's 17 bytes (4, 12 zero bytes and the
 *     address for IPv4 and IPv4-mapped IPv6; 6 and the address for other IPv6), ``number`` an
 *     int >= -1. ``places``: an array of 'i', per row its number (-2: its peer not there, or
 *     its number not such an int) and the offset in ``value`` where it starts; ``missing``: the
 *     list of (row, port, key) of the rows numbered -2, None when there is none. ValueError as
 *     mesh_check's for rows not whole, or an unknown family; TypeError unless ``at_port`` is a
 *     list of 65536.
 *
 * pool_rows(value, places, at, a, heard, probes, node_probes, sums_of, leaf_row, leaf_ix,
 *           kept, min_probes, highest) -> (stop, total, pairs, highest, entries)
 *     pool_readings over the rows of ``value`` that ``places`` (mesh_targets's) numbers and
 *     places, from row ``at`` on: a row numbered -1 or ``a`` is passed by; it stops at a row
 *     numbered otherwise below 0, or out of ``heard``, or not whole in ``value``, and at the
 *     readings pool_readings leaves to its caller. ``entries``: the rows settled as bytes of
 *     (b, answered, 0) u32 triples, native order (what ``added`` gets from pool_readings).
 *
 * pool_entries(entries, at, sign, a, probes, alive, node_probes, sums_of, leaf_row, leaf_ix)
 *         -> (stop, total, pairs)
 *     model/mesh_index.py PairIndex._frame's pass over prober ``a``'s readings ``entries``
 *     (an array of 'I': target, answered, lost, ...) from ``at`` on, ``sign`` 1 (settled) or
 *     -1 (aged out), the tables PairIndex's (lists of ints, of lists of ints, a list of bools;
 *     node_probes a list of ints or, as PairIndex keeps it, an array of 'q', written in place),
 *     up to the first reading that lost a probe (its offset: ``stop``; len(entries) when
 *     none): each one's ``sign * answered`` added to probes[a][b]; for a target b alive,
 *     to node_probes[b], ``total``, leaf_row[leaf_ix[b]][0]; a pair's first probe or its last
 *     (``pairs`` +1 or -1) counted in sums_of[b][1], and when b does not probe a, in
 *     sums_of[a][2] and sums_of[b][2]. ``total`` and ``pairs`` are the caller's to pool for
 *     ``a``. ValueError for an ``at`` not on a reading, or entries not whole readings;
 *     IndexError for a number outside its table; TypeError for a table not as PairIndex's.
 *
 * pool_readings(readings, targets, ids, at, a, heard, probes, node_probes, sums_of, leaf_row,
 *               leaf_ix, kept, min_probes, highest, added) -> (stop, total, pairs, highest)
 *     model/mesh_window.py MeshWindow._add's pass over a frame's ``readings`` (tuples of
 *     (address, port, answered, lost, rtts)) of prober ``a``, their ``targets`` (numbered by
 *     the dict ``ids``), from ``at`` on, up to the first reading it leaves to its caller (its index: ``stop``;
 *     len(readings) when none): one that is not a tuple of 5 with ints (exactly; of a C long)
 *     and a tuple of such ints, of a target ``ids`` does not number (with an int), that lost a probe, of a target whose pair was never answered
 *     (heard[b] != 255), is in ``kept`` (a dict), or reaches ``min_probes``. A reading of
 *     ``a`` itself or of no probe is passed by. Each other one settled as
 *     pool_entries(sign 1) settles it, its (b, answered, 0) appended to the list ``added``
 *     and its RTTs taken into ``highest`` (their largest, if above). Errors as pool_entries's.
 *
 * put_frame(frames, since, mono_s, value, places, a, heard, probes, alive, node_probes, sums_of,
 *           sums, tops, leaf_row, leaf_ix, min_probes) -> (stop, pairs)
 *     model/mesh_window.py MeshWindow._flush's common frame of prober ``a`` (which keeps no
 *     pair's rows) in one call. First its frames (``frames``, a deque of [mono_s, array of 'I'
 *     entries, highest RTT], oldest first) of ``since`` or before leave, each as pool_entries
 *     (sign -1) takes it, and tops[a] ([highest, how many frames have it], when there) loses
 *     it when its highest is that; it stops at one holding a reading that lost a probe, left
 *     in ``frames`` (``stop`` -1). Else the frame of ``mono_s`` (the last of ``frames``, or a
 *     new one appended) gets the rows of ``value`` that pool_rows (kept empty, ``highest`` the
 *     frame's) takes from row 0, their entries appended to its array, its highest raised as
 *     MeshWindow._raise raises it (and tops[a]); ``stop``: the row pool_rows stopped at
 *     (len(places) // 2 when none). Leaf cells, sums_of[a][1], sums_of[a][2], node_probes[a]
 *     and sums[0] are written once, at the end; ``pairs``: the pairs begun less those ended,
 *     the caller's to add to its count. Errors as pool_entries's and pool_rows's; TypeError for
 *     a frame not such a list, ``tops`` not a dict of lists, ``sums`` not a list.
 *
 * peak_sum(buf, width, capacity, count, last, i, j) -> float or None
 *     Over the newest ``last`` rows of a ring of ``capacity`` rows of ``width`` floats
 *     (array 'f', row r at buf[r * width:]; ``count`` rows appended ever, the newest at
 *     (count - 1) % capacity): the largest buf[i] + buf[j] of one row, added as doubles,
 *     a NaN (unknown) counting as nothing beside a known value, a row of two NaN skipped;
 *     None when no row is left. ValueError unless 1 <= width, 1 <= capacity, 0 <= i, j <
 *     width, count >= 0 and the buffer holds capacity * width floats.
 *
 * peer_like(value, keys, tail, addresses, counters) -> (flags, sockets, seen, mono, peers) or None
 *     collectors/peers.py parse_like: a "peers" field (protocol.PEER_HEAD, PEER_ROW a peer,
 *     PEER_ADDR a local address) read as the layout of a field parse_peers read, whose rows'
 *     addresses were ``addresses`` (str), their family byte and 16 address bytes ``keys``
 *     (17 bytes a row, in their order), its local addresses the bytes ``tail``. None unless
 *     the field is status OK with as many rows, its addresses' count that of ``tail``, ``tail``
 *     at its end, its length theirs, its clock not NaN and each row's family and address one
 *     of ``keys`` (in any order: a row gets the address of the first key it is). ``peers``: a
 *     tuple of ``counters`` (a subclass of tuple) of (address, sockets, sent, received,
 *     retrans, delivery, rtt, rtt_max) a row, in the field's order. ValueError for ``keys``
 *     not 17 bytes an address; TypeError for arguments of other types.
 *
 * peer_rates(before, peers, dt, positional, counters, rates) -> (rates, ordered, distinct) or None
 *     model/flows.py _rated's pass over the rows of ``peers`` against ``before`` (tuples of
 *     PeerCounters' eight items) ``dt`` seconds before: {address: ``rates``(tx, rx, rtt_s,
 *     retrans_per_s, sockets, delivery)} in the rows' order (an address twice: its first
 *     row's place, its last row's rates), ``ordered``: their totals (tx + rx, unknown as 0)
 *     never rising, ``distinct``: each row an address of its own; a row of ``before`` matched
 *     by position while ``positional`` and its address is the row's, else by address (the
 *     last row of one). None (no error) when an input is not as the decoder makes them —
 *     ``before`` and ``peers`` not tuples (exactly), a row not a tuple (exactly, or of
 *     ``counters``) of eight with an address of str (exactly), a counter read not an int
 *     (exactly) of u64, ``dt`` not a float (exactly) or 0 where a row is matched —: the
 *     pure-Python twin's to read (it never returns None).
 *
 * peer_names(rates, owner, self_name, names) -> (out, ordered) or None
 *     model/flows.py _by_name's pass: ``rates`` ({address: PeerRates}) by ``owner``'s name of
 *     each address (else the address), in their order, a name equal to ``self_name`` left
 *     out and, with ``names`` (a frozenset), a name not in it; ``ordered``: their totals (tx +
 *     rx, None as 0) never rising. None (no error) when a name comes twice (the caller merges
 *     them) or an input is not as flows makes them (dicts and a frozenset exactly, names str
 *     exactly, rates tuples whose first two are floats exactly or None): the twin's to read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* the ASCII whitespace of str.split(), but the newline that ends a line */
static unsigned char space_table[256];

/* the value of a digit in base 16 (0-15), 255 for anything else */
static unsigned char digit_table[256];

static void init_tables(void) {
    const char *spaces = " \t\r\x0b\x0c\x1c\x1d\x1e\x1f";
    for (const char *c = spaces; *c; c++)
        space_table[(unsigned char)*c] = 1;
    memset(digit_table, 255, sizeof digit_table);
    for (int d = 0; d < 10; d++)
        digit_table['0' + d] = (unsigned char)d;
    for (int d = 0; d < 6; d++) {
        digit_table['a' + d] = (unsigned char)(10 + d);
        digit_table['A' + d] = (unsigned char)(10 + d);
    }
}

#define is_space(c) (space_table[(unsigned char)(c)])

#define EIGHT_SPACES 0x2020202020202020ULL

static inline uint64_t load8(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* some byte of w is below b (every byte of w below 0x80: the text is ASCII) */
static inline int has_byte_below(uint64_t w, unsigned char b) {
    return ((w - 0x0101010101010101ULL * b) & ~w & 0x8080808080808080ULL) != 0;
}
#define is_digit(c) (digit_table[(unsigned char)(c)] < 10)

/* growable u64 buffer */
typedef struct {
    uint64_t *data;
    Py_ssize_t len, cap;
} u64buf;

static int buf_push(u64buf *b, uint64_t v) {
    if (b->len == b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 256;
        uint64_t *d = PyMem_Realloc(b->data, (size_t)cap * sizeof(uint64_t));
        if (d == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    b->data[b->len++] = v;
    return 0;
}

/* one unsigned token in ``base`` (10 or 16) at s[*i..end): digits only, fits in u64 */
static inline int read_u64(const unsigned char *s, Py_ssize_t *i, Py_ssize_t end, unsigned base, uint64_t *out) {
    Py_ssize_t j = *i, start = j;
    uint64_t v = 0;
    unsigned d;
    if (base == 10) {
        while (j < end && (d = (unsigned)s[j] - '0') < 10) {
            v = v * 10 + d;
            j++;
        }
    } else {
        while (j < end && (d = digit_table[s[j]]) < 16) {
            v = v * 16 + d;
            j++;
        }
    }
    if (j == start || (j < end && !is_space(s[j])))
        return -1; /* no digit, or "12x" */
    if (j - start >= (base == 16 ? 17 : 20)) { /* so many digits it may have overflowed */
        v = 0;
        for (Py_ssize_t k = start; k < j; k++) {
            d = digit_table[s[k]];
            if (v > (UINT64_MAX - d) / base)
                return -1;
            v = v * base + d;
        }
    }
    *i = j;
    *out = v;
    return 0;
}

static PyObject *row_error(Py_ssize_t line, const char *what) {
    PyErr_Format(PyExc_ValueError, "line %zd: %s", line, what);
    return NULL;
}

static PyObject *parse_rows(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"text", "sep", "label_mode", "width", "base", "keep", "limit", "start", "stop", NULL};
    PyObject *text, *keep_obj = NULL;
    int sep, label_mode, base = 10;
    Py_ssize_t width, start = 0, stop = -1;
    long long keep = -1;
    unsigned long long limit = UINT64_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UCin|iOKnn", kwlist, &text, &sep, &label_mode, &width, &base,
                                     &keep_obj, &limit, &start, &stop))
        return NULL;
    /* keep: -1 (every column), a bit mask of columns 0-63, or bytes (column c kept when
     * keep[c] is not 0) */
    const unsigned char *keep_cols = NULL;
    Py_ssize_t keep_len = 0;
    int keep_is_mask = 0;
    if (keep_obj != NULL && PyBytes_Check(keep_obj)) {
        keep_cols = (const unsigned char *)PyBytes_AS_STRING(keep_obj);
        keep_len = PyBytes_GET_SIZE(keep_obj);
        keep = 0;
    } else if (keep_obj != NULL) {
        int overflow = 0;
        long long k = PyLong_AsLongLongAndOverflow(keep_obj, &overflow);
        if (k == -1 && PyErr_Occurred())
            return NULL;
        if (overflow || k != -1) { /* a mask of columns 0-63 */
            unsigned long long m = PyLong_AsUnsignedLongLong(keep_obj);
            if (m == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                PyErr_SetString(PyExc_OverflowError, "keep: not a mask of 64 columns");
                return NULL;
            }
            keep = (long long)m;
            keep_is_mask = 1;
        }
    }
    if (label_mode < 0 || label_mode > 2)
        return PyErr_Format(PyExc_ValueError, "label_mode %d", label_mode);
    if (base != 10 && base != 16)
        return PyErr_Format(PyExc_ValueError, "base %d", base);
    if (!PyUnicode_IS_ASCII(text))
        return row_error(0, "not ASCII");
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t whole = PyUnicode_GET_LENGTH(text);
    if (stop < 0)
        stop = whole;
    /* the loops rely on the character at the end being a newline or the terminating NUL */
    if (start < 0 || start > stop || stop > whole || (stop < whole && s[stop] != '\n'))
        return PyErr_Format(PyExc_ValueError, "start %zd, stop %zd: not a span of whole lines", start, stop);
    s += start;
    Py_ssize_t n = stop - start;

    /* a number takes at least two characters with its separator (or the end): at most
     * n / 2 + 1 of them, so the values never outgrow this */
    u64buf values = {NULL, 0, 0}, ids = {NULL, 0, 0};
    values.cap = n / 2 + 1;
    values.data = PyMem_Malloc((size_t)values.cap * sizeof(uint64_t));
    if (values.data == NULL)
        return PyErr_NoMemory();
    PyObject *labels = label_mode == 1 ? PyList_New(0) : NULL;
    if (label_mode == 1 && labels == NULL) {
        PyMem_Free(values.data);
        return NULL;
    }
    Py_ssize_t line = 0, pos = 0;
    /* column c is kept when c < klen ? kcols[c] : kdefault */
    unsigned char mask_cols[64];
    const unsigned char *kcols = keep_cols;
    Py_ssize_t klen = keep_len;
    unsigned char kdefault = 0;
    if (keep_cols == NULL) {
        if (!keep_is_mask) {
            klen = 0;
            kdefault = 1;
        } else {
            for (int c = 0; c < 64; c++)
                mask_cols[c] = (unsigned char)(((uint64_t)keep >> c) & 1);
            kcols = mask_cols;
            klen = 64;
        }
    }
    while (pos < n) {
        const unsigned char *nl = memchr(s + pos, '\n', (size_t)(n - pos));
        Py_ssize_t end = nl ? nl - s : n;
        line++;
        Py_ssize_t i = pos;
        pos = end + 1;
        while (i < end && is_space(s[i]))
            i++;
        if (i == end)
            continue; /* blank */
        if (label_mode) {
            Py_ssize_t at = i;
            while (at < end && s[at] != (unsigned char)sep)
                at++;
            if (at == end) {
                row_error(line, "no label separator");
                goto fail;
            }
            Py_ssize_t lend = at;
            while (lend > i && is_space(s[lend - 1]))
                lend--;
            for (Py_ssize_t k = i; k < lend; k++) {
                if (is_space(s[k])) {
                    row_error(line, "space inside the label");
                    goto fail;
                }
            }
            if (label_mode == 1) {
                PyObject *label = PyUnicode_FromStringAndSize((const char *)s + i, lend - i);
                if (label == NULL)
                    goto fail;
                int err = PyList_Append(labels, label);
                Py_DECREF(label);
                if (err < 0)
                    goto fail;
            } else {
                Py_ssize_t d = lend;
                while (d > i && is_digit(s[d - 1]))
                    d--;
                if (d == i || d == lend) {
                    row_error(line, "label is not a name and a number");
                    goto fail;
                }
                for (Py_ssize_t k = i; k < d; k++) {
                    if (is_digit(s[k])) {
                        row_error(line, "label is not a name and a number");
                        goto fail;
                    }
                }
                Py_ssize_t k = d;
                uint64_t id;
                if (read_u64(s, &k, lend, 10u, &id) < 0) {
                    row_error(line, "label number out of range");
                    goto fail;
                }
                if (buf_push(&ids, id) < 0)
                    goto fail;
            }
            i = at + 1;
        }
        /* The loops below need no bound: s[end] is the line's newline or the string's
         * terminating NUL, neither a digit nor a space. */
        Py_ssize_t count = 0;
        const unsigned maxd = base == 16 ? 17 : 20; /* from this many digits, overflow is possible */
        for (;;) {
            if (is_space(s[i])) {
                i++;
                if (is_space(s[i])) { /* padded columns: 8 spaces at a time, then the rest */
                    while (i + 8 <= n && load8(s + i) == EIGHT_SPACES)
                        i += 8;
                    while (is_space(s[i]))
                        i++;
                }
            }
            if (i >= end)
                break;
            if (!(count < klen ? kcols[count] : kdefault)) {
                /* a column not kept: any token, not converted (8 characters at once) */
                if (i + 9 <= n && !has_byte_below(load8(s + i), 0x21) && (is_space(s[i + 8]) || i + 8 == end))
                    i += 8;
                else
                    while (i < end && !is_space(s[i]))
                        i++;
                count++;
                continue;
            }
            Py_ssize_t first = i;
            uint64_t v = 0;
            unsigned d;
            if (base == 10) {
                while ((d = (unsigned)s[i] - '0') < 10) {
                    v = v * 10 + d;
                    i++;
                }
            } else {
                while ((d = digit_table[s[i]]) < 16) {
                    v = v * 16 + d;
                    i++;
                }
            }
            if (i == first || (i != end && !is_space(s[i])) ||
                ((unsigned)(i - first) >= maxd && read_u64(s, &first, end, (unsigned)base, &v) < 0)) {
                row_error(line, "not an unsigned number");
                goto fail;
            }
            if (v > limit) {
                row_error(line, "a number above the limit");
                goto fail;
            }
            values.data[values.len++] = v; /* never past cap: see its size */
            count++;
        }
        if (width < 0)
            width = count;
        if (count != width) {
            PyErr_Format(PyExc_ValueError, "line %zd: %zd numbers, expected %zd", line, count, width);
            goto fail;
        }
    }
    PyObject *vbytes = PyBytes_FromStringAndSize((const char *)values.data, values.len * (Py_ssize_t)sizeof(uint64_t));
    PyMem_Free(values.data);
    values.data = NULL;
    if (vbytes == NULL)
        goto fail;
    PyObject *lab;
    if (label_mode == 2) {
        lab = PyBytes_FromStringAndSize((const char *)ids.data, ids.len * (Py_ssize_t)sizeof(uint64_t));
        PyMem_Free(ids.data);
        ids.data = NULL;
        if (lab == NULL) {
            Py_DECREF(vbytes);
            goto fail;
        }
    } else if (label_mode == 1) {
        lab = labels;
        labels = NULL;
    } else {
        lab = Py_None;
        Py_INCREF(lab);
    }
    return Py_BuildValue("(NnN)", lab, width < 0 ? (Py_ssize_t)0 : width, vbytes);

fail:
    PyMem_Free(values.data);
    PyMem_Free(ids.data);
    Py_XDECREF(labels);
    return NULL;
}

/* a read-only, contiguous buffer of ``itemsize``-byte items whose format is one of
 * ``codes`` (native byte order); TypeError ``what`` otherwise */
static int get_typed(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *codes, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (f[0] == '@' || f[0] == '=')
        f++;
    if (view->itemsize != itemsize || f[0] == 0 || f[1] != 0 || strchr(codes, f[0]) == NULL) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, what);
        return -1;
    }
    return 0;
}

static int get_u64(PyObject *obj, Py_buffer *view) {
    return get_typed(obj, view, 8, "QL", "expected a buffer of unsigned 64-bit integers");
}

static int get_doubles(PyObject *obj, Py_buffer *view) {
    return get_typed(obj, view, 8, "d", "expected a buffer of doubles");
}

/* for deltas of 32-bit counters */
static int get_u32(PyObject *obj, Py_buffer *view) {
    return get_typed(obj, view, 4, "I", "expected a buffer of unsigned 32-bit integers");
}

static PyObject *array_type; /* array.array */
static PyObject *one_double, *one_code; /* array('d', [0.0]) and array('H', [0]) */

/* A new array of ``n`` items of the type of ``one`` (an array of one item), whose items the
 * caller then writes through ``*data``: made and filled in place, not copied from a bytes */
static PyObject *new_array(PyObject *one, Py_ssize_t n, void **data) {
    PyObject *out = PySequence_Repeat(one, n);
    if (out == NULL)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_WRITABLE) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    *data = view.buf; /* (stays valid: nothing resizes an array only this module holds) */
    PyBuffer_Release(&view);
    return out;
}

/* (``values``, unknown); steals ``values`` */
static PyObject *result(PyObject *values, Py_ssize_t unknown) {
    return Py_BuildValue("(Nn)", values, unknown);
}

static PyObject *deltas(PyObject *self, PyObject *args) {
    PyObject *a, *b, *ceil_obj = NULL;
    double scale;
    int wrap32;
    if (!PyArg_ParseTuple(args, "OOdp|O", &a, &b, &scale, &wrap32, &ceil_obj))
        return NULL;
    Py_buffer pa, pb, pc;
    int have_pc = 0;
    double one_ceiling = INFINITY;
    /* u64 buffers, or (wrap32 only) u32 buffers */
    int narrow = 0;
    if (get_u64(a, &pa) < 0) {
        if (!wrap32 || !PyErr_ExceptionMatches(PyExc_TypeError))
            return NULL;
        PyErr_Clear();
        if (get_u32(a, &pa) < 0)
            return NULL;
        narrow = 1;
    }
    if ((narrow ? get_u32(b, &pb) : get_u64(b, &pb)) < 0) {
        PyBuffer_Release(&pa);
        return NULL;
    }
    Py_ssize_t n = pa.len / pa.itemsize;
    PyObject *out = NULL;
    if (pb.len / pb.itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "buffers of different lengths");
        goto fail;
    }
    if (ceil_obj != NULL && ceil_obj != Py_None) {
        if (PyFloat_Check(ceil_obj) || PyLong_Check(ceil_obj)) {
            one_ceiling = PyFloat_AsDouble(ceil_obj);
            if (one_ceiling == -1.0 && PyErr_Occurred())
                goto fail;
        } else {
            if (get_doubles(ceil_obj, &pc) < 0)
                goto fail;
            have_pc = 1;
            Py_ssize_t m = pc.len / 8;
            if (m == 0 ? n != 0 : n % m != 0) {
                PyErr_SetString(PyExc_ValueError, "ceilings do not divide the counters into rows");
                goto fail;
            }
        }
    }
    void *data;
    out = new_array(one_double, n, &data);
    if (out == NULL)
        goto fail;
    double *o = data;
    Py_ssize_t unknown = 0;
    if (narrow) {
        const uint32_t *p = pa.buf, *c = pb.buf;
        for (Py_ssize_t i = 0; i < n; i++)
            o[i] = (double)(uint32_t)(c[i] - p[i]) * scale;
    } else {
        const uint64_t *p = pa.buf, *c = pb.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (wrap32) {
                o[i] = (double)(uint32_t)(c[i] - p[i]) * scale;
            } else if (c[i] >= p[i]) {
                o[i] = (double)(c[i] - p[i]) * scale;
            } else {
                o[i] = NAN;
                unknown++;
            }
        }
    }
    /* a rate above its ceiling is no rate (a counter reset, or a clock that hardly moved) */
    if (have_pc) {
        const double *ceil = pc.buf;
        Py_ssize_t m = pc.len / 8, w = m ? n / m : 0;
        for (Py_ssize_t r = 0; r < m; r++) {
            double top = ceil[r];
            for (Py_ssize_t i = r * w; i < (r + 1) * w; i++) {
                if (o[i] > top) {
                    o[i] = NAN;
                    unknown++;
                }
            }
        }
    } else if (one_ceiling < INFINITY) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (o[i] > one_ceiling) {
                o[i] = NAN;
                unknown++;
            }
        }
    }
    PyBuffer_Release(&pa);
    PyBuffer_Release(&pb);
    if (have_pc)
        PyBuffer_Release(&pc);
    return result(out, unknown);

fail:
    PyBuffer_Release(&pa);
    PyBuffer_Release(&pb);
    if (have_pc)
        PyBuffer_Release(&pc);
    Py_XDECREF(out);
    return NULL;
}

static PyObject *share(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    double scale;
    if (!PyArg_ParseTuple(args, "OOOOd", &objs[0], &objs[1], &objs[2], &objs[3], &scale))
        return NULL;
    Py_buffer v[4];
    int got = 0;
    for (; got < 4; got++) {
        if (get_u64(objs[got], &v[got]) < 0)
            goto fail;
    }
    Py_ssize_t n = v[0].len / 8;
    for (int k = 1; k < 4; k++) {
        if (v[k].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "buffers of different lengths");
            goto fail;
        }
    }
    void *data;
    PyObject *out = new_array(one_double, n, &data);
    if (out == NULL)
        goto fail;
    const uint64_t *pp = v[0].buf, *pc = v[1].buf, *wp = v[2].buf, *wc = v[3].buf;
    double *o = data;
    Py_ssize_t unknown = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (wc[i] > wp[i] && pc[i] >= pp[i] && pc[i] - pp[i] <= wc[i] - wp[i]) {
            o[i] = (double)(pc[i] - pp[i]) * scale / (double)(wc[i] - wp[i]);
        } else {
            o[i] = NAN;
            unknown++;
        }
    }
    for (int k = 0; k < 4; k++)
        PyBuffer_Release(&v[k]);
    return result(out, unknown);
fail:
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&v[k]);
    return NULL;
}

static PyObject *columns(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t width, ncols;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &width, &ncols))
        return NULL;
    Py_buffer v;
    if (get_u64(obj, &v) < 0)
        return NULL;
    Py_ssize_t n = v.len / 8;
    if (width < 1 || ncols < 0 || ncols > width || n % width) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "not rows of that width");
        return NULL;
    }
    Py_ssize_t rows = n / width;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (ncols + 1) * rows * 8);
    if (out == NULL) {
        PyBuffer_Release(&v);
        return NULL;
    }
    const uint64_t *x = v.buf;
    uint64_t *o = (uint64_t *)PyBytes_AS_STRING(out), *sums = o + ncols * rows;
    for (Py_ssize_t r = 0; r < rows; r++) {
        uint64_t total = 0;
        for (Py_ssize_t c = 0; c < ncols; c++) {
            uint64_t value = x[r * width + c];
            o[c * rows + r] = value;
            total += value; /* modulo 2**64, as the twin */
        }
        sums[r] = total;
    }
    PyBuffer_Release(&v);
    return out;
}

/* RateRing's code of a rate: round(log2(1 + v) * 1500), ties to even as Python's round();
 * 65535 unknown (NaN, negative), 65534 at and past the ceiling */
static unsigned short rate_code(double v, double ceiling) {
    if (!(v >= 0))
        return 65535;
    if (v >= ceiling)
        return 65534;
    return (unsigned short)nearbyint(log2(1.0 + v) * 1500.0);
}

/* The rows ``rate_codes`` and ``rate_row`` code: ``obj``'s doubles (into ``v``, released
 * on failure), rows of ``stride``, and the positions in a row of ``offsets`` (a tuple of at
 * most 16, into ``off``, ``*k`` of them); ``*rows`` the rows. ValueError unless they fit. */
static int rate_rows(PyObject *obj, Py_ssize_t stride, PyObject *offsets, Py_buffer *v, Py_ssize_t off[16],
                     Py_ssize_t *k, Py_ssize_t *rows) {
    if (get_doubles(obj, v) < 0)
        return -1;
    Py_ssize_t n = v->len / 8;
    *k = PyTuple_GET_SIZE(offsets);
    if (stride < 1 || n % stride || *k > 16) {
        PyBuffer_Release(v);
        PyErr_SetString(PyExc_ValueError, "not rows of that stride");
        return -1;
    }
    for (Py_ssize_t j = 0; j < *k; j++) {
        off[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, j));
        if (off[j] == -1 && PyErr_Occurred()) {
            PyBuffer_Release(v);
            return -1;
        }
        if (off[j] < 0 || off[j] >= stride) {
            PyBuffer_Release(v);
            PyErr_SetString(PyExc_ValueError, "offset outside the row");
            return -1;
        }
    }
    *rows = n / stride;
    return 0;
}

/* Each row's values at ``off`` as their codes, row after row, into ``o``. */
static void code_rows(const double *x, Py_ssize_t rows, Py_ssize_t stride, const Py_ssize_t *off, Py_ssize_t k,
                      double ceiling, unsigned short *o) {
    for (Py_ssize_t r = 0; r < rows; r++)
        for (Py_ssize_t j = 0; j < k; j++)
            *o++ = rate_code(x[r * stride + off[j]], ceiling);
}

static PyObject *rate_codes(PyObject *self, PyObject *args) {
    PyObject *obj, *offsets;
    Py_ssize_t stride, k, rows, off[16];
    double ceiling;
    if (!PyArg_ParseTuple(args, "OnO!d", &obj, &stride, &PyTuple_Type, &offsets, &ceiling))
        return NULL;
    Py_buffer v;
    if (rate_rows(obj, stride, offsets, &v, off, &k, &rows) < 0)
        return NULL;
    void *data;
    PyObject *out = new_array(one_code, rows * k, &data);
    if (out == NULL) {
        PyBuffer_Release(&v);
        return NULL;
    }
    code_rows(v.buf, rows, stride, off, k, ceiling, data);
    PyBuffer_Release(&v);
    return out;
}

/* A writable, contiguous buffer of ``itemsize``-byte items of format ``code``, holding
 * ``n`` items from item ``at`` on; TypeError ``what`` or ValueError otherwise. */
static int get_row(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, char code, const char *what,
                   Py_ssize_t at, Py_ssize_t n) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (f[0] == '@' || f[0] == '=')
        f++;
    if (view->itemsize != itemsize || f[0] != code || f[1] != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, what);
        return -1;
    }
    if (at < 0 || n < 0 || at > view->len / itemsize - n) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "the row is outside the buffer");
        return -1;
    }
    return 0;
}

static PyObject *float_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "float_row(buf, at, values)");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[1]);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    if (!PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "values must be a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args[2]);
    double x[64];
    if (n > 64) {
        PyErr_SetString(PyExc_ValueError, "float_row: at most 64 values");
        return NULL;
    }
    for (Py_ssize_t j = 0; j < n; j++) { /* read first: a value that is no number writes nothing */
        PyObject *item = PyTuple_GET_ITEM(args[2], j);
        if (item == Py_None) {
            x[j] = NAN;
        } else if (PyFloat_CheckExact(item)) {
            x[j] = PyFloat_AS_DOUBLE(item);
        } else { /* (an int, or anything with __float__, as struct takes it) */
            x[j] = PyFloat_AsDouble(item);
            if (x[j] == -1.0 && PyErr_Occurred())
                return NULL;
        }
    }
    Py_buffer v;
    if (get_row(args[0], &v, 4, 'f', "expected a buffer of floats", at, n) < 0)
        return NULL;
    float *o = (float *)v.buf + at;
    for (Py_ssize_t j = 0; j < n; j++)
        o[j] = (float)x[j]; /* (as struct's native 'f' packs it) */
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

static PyObject *rate_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "rate_row(buf, at, width, values, stride, offsets, ceiling)");
        return NULL;
    }
    Py_ssize_t at, width, stride, k, rows, off[16];
    double ceiling;
    /* (each converted and checked in turn: none is called with an exception set) */
    if (((at = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        || ((width = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        || ((stride = PyLong_AsSsize_t(args[4])) == -1 && PyErr_Occurred())
        || ((ceiling = PyFloat_AsDouble(args[6])) == -1.0 && PyErr_Occurred()))
        return NULL;
    PyObject *offsets = args[5];
    if (!PyTuple_Check(offsets)) {
        PyErr_SetString(PyExc_TypeError, "offsets must be a tuple");
        return NULL;
    }
    Py_buffer v;
    if (rate_rows(args[3], stride, offsets, &v, off, &k, &rows) < 0)
        return NULL;
    if (rows * k != width) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "rate_row: not width codes");
        return NULL;
    }
    Py_buffer out;
    if (get_row(args[0], &out, 2, 'H', "expected a buffer of unsigned 16-bit integers", at, width) < 0) {
        PyBuffer_Release(&v);
        return NULL;
    }
    code_rows(v.buf, rows, stride, off, k, ceiling, (unsigned short *)out.buf + at);
    PyBuffer_Release(&out);
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

static PyObject *column_stats(PyObject *self, PyObject *obj) {
    Py_buffer v;
    if (get_doubles(obj, &v) < 0)
        return NULL;
    const double *x = v.buf;
    Py_ssize_t n = v.len / 8, at = -1;
    double total = 0.0, best = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        total += x[i];
        if (at < 0 || x[i] > best) { /* the first of equal maxima, as max() and index() */
            best = x[i];
            at = i;
        }
    }
    PyBuffer_Release(&v);
    if (at < 0)
        return Py_BuildValue("(dOO)", total, Py_None, Py_None);
    return Py_BuildValue("(ddn)", total, best, at);
}

static PyObject *iface_totals(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3]))
        return NULL;
    Py_buffer flat, rows, lrows, lfull;
    if (get_doubles(objs[0], &flat) < 0)
        return NULL;
    if ((flat.len / 8) % 16) {
        PyBuffer_Release(&flat);
        PyErr_SetString(PyExc_TypeError, "expected rows of 16 doubles");
        return NULL;
    }
    if (get_u64(objs[1], &rows) < 0) {
        PyBuffer_Release(&flat);
        return NULL;
    }
    if (get_u64(objs[2], &lrows) < 0) {
        PyBuffer_Release(&flat);
        PyBuffer_Release(&rows);
        return NULL;
    }
    if (get_doubles(objs[3], &lfull) < 0) {
        PyBuffer_Release(&flat);
        PyBuffer_Release(&rows);
        PyBuffer_Release(&lrows);
        return NULL;
    }
    PyObject *result = NULL;
    const double *v = flat.buf, *full = lfull.buf;
    const uint64_t *r = rows.buf, *lr = lrows.buf;
    Py_ssize_t nrows = flat.len / 8 / 16, nr = rows.len / 8, nl = lrows.len / 8;
    if (lfull.len / 8 != nl) {
        PyErr_SetString(PyExc_ValueError, "link rows and link speeds differ");
        goto done;
    }
    double rx = 0, tx = 0, drops = 0, errs = 0, drops_max = 0, errs_max = 0, link_max = 0;
    for (Py_ssize_t k = 0; k < nr; k++) {
        if (r[k] >= (uint64_t)nrows) {
            PyErr_SetString(PyExc_IndexError, "row out of range");
            goto done;
        }
        const double *row = v + r[k] * 16;
        double d = row[3] + row[11], e = row[2] + row[10];
        rx += row[0];
        tx += row[8];
        drops += d;
        errs += e;
        if (k == 0 || d > drops_max)
            drops_max = d;
        if (k == 0 || e > errs_max)
            errs_max = e;
    }
    for (Py_ssize_t k = 0; k < nl; k++) {
        if (lr[k] >= (uint64_t)nrows) {
            PyErr_SetString(PyExc_IndexError, "row out of range");
            goto done;
        }
        const double *row = v + lr[k] * 16;
        double busiest = row[0] > row[8] ? row[0] : row[8];
        double link = busiest / full[k];
        if (k == 0 || link > link_max)
            link_max = link;
    }
    if (nl)
        result = Py_BuildValue("(ddddddd)", rx, tx, drops, errs, drops_max, errs_max, link_max * 100);
    else
        result = Py_BuildValue("(ddddddO)", rx, tx, drops, errs, drops_max, errs_max, Py_None);
done:
    PyBuffer_Release(&flat);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&lrows);
    PyBuffer_Release(&lfull);
    return result;
}

static PyObject *positive(PyObject *self, PyObject *obj) {
    Py_buffer v;
    if (get_doubles(obj, &v) < 0)
        return NULL;
    const double *x = v.buf;
    Py_ssize_t n = v.len / 8, count = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        count += x[i] > 0;
    PyObject *out = PyTuple_New(count);
    if (out != NULL) {
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < n && k < count; i++) {
            if (x[i] > 0) {
                PyObject *index = PyLong_FromSsize_t(i);
                if (index == NULL) {
                    Py_CLEAR(out);
                    break;
                }
                PyTuple_SET_ITEM(out, k++, index);
            }
        }
    }
    PyBuffer_Release(&v);
    return out;
}

#define FIELD_KEY_MAX 1024

static PyObject *frame_fields(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t limit = -1, count = 0;
    if (!PyArg_ParseTuple(args, "O|n", &obj, &limit))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *s = (const char *)view.buf;
    Py_ssize_t n = view.len, pos = 0;
    PyObject *out = PyDict_New();
    if (out == NULL)
        goto fail;
    while (pos < n) {
        if (limit >= 0 && count++ >= limit) {
            PyErr_SetString(PyExc_ValueError, "too many fields");
            goto fail;
        }
        Py_ssize_t room = n - pos < FIELD_KEY_MAX + 1 ? n - pos : FIELD_KEY_MAX + 1;
        const char *nul = memchr(s + pos, 0, (size_t)room);
        if (nul == NULL || nul == s + pos) {
            PyErr_SetString(PyExc_ValueError, "not a field key");
            goto fail;
        }
        Py_ssize_t at = nul - s + 1;
        if (n - at < 4) {
            PyErr_SetString(PyExc_ValueError, "truncated field");
            goto fail;
        }
        const unsigned char *u = (const unsigned char *)s + at;
        uint32_t size = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
        at += 4;
        if ((Py_ssize_t)size > n - at) {
            PyErr_SetString(PyExc_ValueError, "truncated field");
            goto fail;
        }
        PyObject *key = PyUnicode_DecodeUTF8(s + pos, nul - (s + pos), "replace");
        if (key == NULL)
            goto fail;
        PyObject *value = PyBytes_FromStringAndSize(s + at, (Py_ssize_t)size);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        int failed = PyDict_SetItem(out, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (failed)
            goto fail;
        pos = at + (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

/* ---- usual_frame: a steady node's frame in one pass (collectors/frames.py FrameDecoder) ---- */

/* the fields of a usual frame: those before USUAL_NEEDED are in every one, the others may be */
static const char *const usual_keys[] = {"wall", "mono", "netdev", "cpusum", "tcp", "boot_id", "hostname", "ifsame",
                                         "peers", "mesh"};
enum { USUAL_WALL, USUAL_MONO, USUAL_NETDEV, USUAL_CPUSUM, USUAL_TCP, USUAL_BOOT, USUAL_HOST, USUAL_IFSAME,
       USUAL_NEEDED, USUAL_PEERS = USUAL_NEEDED, USUAL_MESH, USUAL_KEYS };
#define USUAL_CPUSUM_SIZE 88 /* protocol.CPUSUM: "<10Qd" */

static const Py_ssize_t usual_key_size[] = {4, 4, 6, 6, 3, 7, 8, 6, 5, 4}; /* strlen(usual_keys[k]) */
static PyObject *one_u64, *one_i64; /* array('Q', [0]) and array('q', [0]), made on first use */

/* float(value) when ``value`` is 1 to 63 of the characters 0-9 and '.' that make one float;
 * else -1 (no exception set) */
static int usual_float(const char *s, Py_ssize_t n, double *out) {
    char buf[64];
    if (n < 1 || n > 63)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
            return -1;
    }
    memcpy(buf, s, (size_t)n);
    buf[n] = '\0';
    char *end;
    double d = PyOS_string_to_double(buf, &end, NULL);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (end != buf + n)
        return -1;
    *out = d;
    return 0;
}

/* an array of ``n`` items like ``one`` holding the ``n`` little-endian 8-byte values at ``s`` */
static PyObject *usual_array(PyObject *one, const char *s, Py_ssize_t n) {
    void *data;
    PyObject *out = new_array(one, n, &data);
    if (out == NULL)
        return NULL;
    memcpy(data, s, (size_t)n * 8);
#if PY_BIG_ENDIAN
    uint64_t *v = data;
    for (Py_ssize_t i = 0; i < n; i++)
        v[i] = __builtin_bswap64(v[i]);
#endif
    return out;
}

static uint64_t usual_u64(const unsigned char *u) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | u[i];
    return v;
}

/* state[i] as bytes (borrowed) or an int >= least; NULL / -1 with TypeError or ValueError */
static PyObject *usual_bytes(PyObject *state, Py_ssize_t i) {
    PyObject *b = PyTuple_GET_ITEM(state, i);
    if (!PyBytes_Check(b)) {
        PyErr_SetString(PyExc_TypeError, "usual_frame: state must be (bytes, bytes, bytes, int, bytes, int, int)");
        return NULL;
    }
    return b;
}

static Py_ssize_t usual_count(PyObject *state, Py_ssize_t i, Py_ssize_t least) {
    PyObject *o = PyTuple_GET_ITEM(state, i);
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "usual_frame: state must be (bytes, bytes, bytes, int, bytes, int, int)");
        return -1;
    }
    Py_ssize_t v = PyLong_AsSsize_t(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < least) {
        PyErr_SetString(PyExc_ValueError, "usual_frame: a count of the state out of range");
        return -1;
    }
    return v;
}

/* does field ``f`` (a value of ``n`` bytes at ``s``) start with ``head`` and a newline, then
 * hold ``count`` 8-byte values exactly? */
static int usual_table(const char *s, Py_ssize_t n, PyObject *head, Py_ssize_t count) {
    Py_ssize_t h = PyBytes_GET_SIZE(head);
    return n - h - 1 == count * 8 && memcmp(s, PyBytes_AS_STRING(head), (size_t)h) == 0 && s[h] == '\n';
}

static PyObject *usual_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "usual_frame(payload, state, sums) takes 3 arguments");
        return NULL;
    }
    PyObject *state = args[1], *sums_obj = args[2];
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != 7) {
        PyErr_SetString(PyExc_TypeError, "usual_frame: state must be (bytes, bytes, bytes, int, bytes, int, int)");
        return NULL;
    }
    if (!PyType_Check(sums_obj) || !PyType_IsSubtype((PyTypeObject *)sums_obj, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "usual_frame: sums must be a subclass of tuple");
        return NULL;
    }
    PyObject *boot = usual_bytes(state, 0), *host = boot ? usual_bytes(state, 1) : NULL;
    PyObject *names = host ? usual_bytes(state, 2) : NULL;
    Py_ssize_t nnames = names ? usual_count(state, 3, 1) : -1;
    PyObject *tcp_names = nnames >= 0 ? usual_bytes(state, 4) : NULL;
    Py_ssize_t ntcp = tcp_names ? usual_count(state, 5, 1) : -1;
    Py_ssize_t next = ntcp >= 0 ? usual_count(state, 6, 0) : -1;
    if (next < 0)
        return NULL;
    if (one_u64 == NULL) {
        one_u64 = PyObject_CallFunction(array_type, "s(i)", "Q", 0);
        if (one_u64 == NULL)
            return NULL;
    }
    if (one_i64 == NULL) {
        one_i64 = PyObject_CallFunction(array_type, "s(i)", "q", 0);
        if (one_i64 == NULL)
            return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *s = (const char *)view.buf, *at_key[USUAL_KEYS];
    Py_ssize_t n = view.len, pos = 0, size_of[USUAL_KEYS];
    unsigned seen = 0;
    PyObject *out = NULL, *items[8] = {NULL};
    while (pos < n) {
        Py_ssize_t room = n - pos < FIELD_KEY_MAX + 1 ? n - pos : FIELD_KEY_MAX + 1;
        const char *nul = memchr(s + pos, 0, (size_t)room);
        if (nul == NULL || nul == s + pos)
            goto not_usual;
        Py_ssize_t at = nul - s + 1, klen = nul - (s + pos);
        if (n - at < 4)
            goto not_usual;
        const unsigned char *u = (const unsigned char *)s + at;
        uint32_t size = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
        at += 4;
        if ((Py_ssize_t)size > n - at)
            goto not_usual;
        int k = 0;
        while (k < USUAL_KEYS && !(usual_key_size[k] == klen && memcmp(usual_keys[k], s + pos, klen) == 0))
            k++;
        if (k == USUAL_KEYS || seen & 1u << k) /* another field, or one twice */
            goto not_usual;
        seen |= 1u << k;
        at_key[k] = s + at;
        size_of[k] = (Py_ssize_t)size;
        pos = at + (Py_ssize_t)size;
    }
    if ((seen & ((1u << USUAL_NEEDED) - 1)) != (1u << USUAL_NEEDED) - 1)
        goto not_usual;
    double wall, mono;
    if (usual_float(at_key[USUAL_WALL], size_of[USUAL_WALL], &wall) < 0 ||
        usual_float(at_key[USUAL_MONO], size_of[USUAL_MONO], &mono) < 0)
        goto not_usual;
    if (size_of[USUAL_BOOT] != PyBytes_GET_SIZE(boot) ||
        memcmp(at_key[USUAL_BOOT], PyBytes_AS_STRING(boot), (size_t)size_of[USUAL_BOOT]) != 0 ||
        size_of[USUAL_HOST] != PyBytes_GET_SIZE(host) ||
        memcmp(at_key[USUAL_HOST], PyBytes_AS_STRING(host), (size_t)size_of[USUAL_HOST]) != 0)
        goto not_usual;
    if (!usual_table(at_key[USUAL_NETDEV], size_of[USUAL_NETDEV], names, 16 * nnames) ||
        !usual_table(at_key[USUAL_TCP], size_of[USUAL_TCP], tcp_names, ntcp + next))
        goto not_usual;
    if (size_of[USUAL_CPUSUM] != USUAL_CPUSUM_SIZE)
        goto not_usual;
    const unsigned char *c = (const unsigned char *)at_key[USUAL_CPUSUM];
    uint64_t sums[10];
    for (int i = 0; i < 10; i++)
        sums[i] = usual_u64(c + 8 * i);
    /* the usual mask: everything summed, a hottest CPU of some ticks (frame_tables.parse_cpusum) */
    if (sums[0] != 15 || sums[9] == 0 || sums[8] > sums[9])
        goto not_usual;
    union { uint64_t u; double d; } since;
    since.u = usual_u64(c + 80);
    PyTypeObject *type = (PyTypeObject *)sums_obj;
    PyObject *sums_out = type->tp_alloc(type, 10);
    items[5] = sums_out;
    if (sums_out == NULL)
        goto fail;
    for (int i = 0; i < 9; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(sums[i + 1]);
        if (v == NULL)
            goto fail;
        PyTuple_SET_ITEM(sums_out, i, v);
    }
    PyObject *since_obj = PyFloat_FromDouble(since.d);
    if (since_obj == NULL)
        goto fail;
    PyTuple_SET_ITEM(sums_out, 9, since_obj);
    Py_ssize_t hn = PyBytes_GET_SIZE(names) + 1, ht = PyBytes_GET_SIZE(tcp_names) + 1;
    if ((items[0] = PyFloat_FromDouble(wall)) == NULL || (items[1] = PyFloat_FromDouble(mono)) == NULL ||
        (items[2] = usual_array(one_u64, at_key[USUAL_NETDEV] + hn, 16 * nnames)) == NULL ||
        (items[3] = usual_array(one_i64, at_key[USUAL_TCP] + ht, ntcp)) == NULL ||
        (items[4] = usual_array(one_u64, at_key[USUAL_TCP] + ht + 8 * ntcp, next)) == NULL)
        goto fail;
    for (int k = USUAL_PEERS; k <= USUAL_MESH; k++) {
        if (seen & 1u << k)
            items[6 + k - USUAL_PEERS] = PyBytes_FromStringAndSize(at_key[k], size_of[k]);
        else {
            Py_INCREF(Py_None);
            items[6 + k - USUAL_PEERS] = Py_None;
        }
        if (items[6 + k - USUAL_PEERS] == NULL)
            goto fail;
    }
    if ((out = PyTuple_New(8)) == NULL)
        goto fail;
    for (int i = 0; i < 8; i++)
        PyTuple_SET_ITEM(out, i, items[i]);
    PyBuffer_Release(&view);
    return out;
not_usual:
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    for (int i = 0; i < 8; i++)
        Py_XDECREF(items[i]);
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *peak_sum(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t width, cap, count, last, i, j;
    if (!PyArg_ParseTuple(args, "Onnnnnn", &obj, &width, &cap, &count, &last, &i, &j))
        return NULL;
    Py_buffer v;
    if (get_typed(obj, &v, 4, "f", "expected a buffer of floats") < 0)
        return NULL;
    if (width < 1 || cap < 1 || count < 0 || i < 0 || j < 0 || i >= width || j >= width ||
        v.len / 4 != cap * width) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "peak_sum: not a ring of capacity x width floats");
        return NULL;
    }
    const float *x = v.buf;
    Py_ssize_t n = last < count ? last : count;
    if (n > cap)
        n = cap;
    int have = 0;
    double peak = 0.0;
    if (n > 0) {
        Py_ssize_t end = count % cap ? count % cap : cap; /* the physical row after the newest */
        Py_ssize_t row = end - n < 0 ? cap + end - n : end - n;
        for (Py_ssize_t k = 0; k < n; k++, row = row + 1 == cap ? 0 : row + 1) {
            double a = x[row * width + i], b = x[row * width + j], s;
            if (isnan(a)) {
                if (isnan(b))
                    continue;
                s = b;
            } else {
                s = isnan(b) ? a : a + b;
            }
            if (!have || s > peak) { /* the first of equal maxima, as max() */
                peak = s;
                have = 1;
            }
        }
    }
    PyBuffer_Release(&v);
    if (!have)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(peak);
}

#define MESH_ROW_SIZE 28

static PyObject *mesh_rows(PyObject *self, PyObject *args) {
    PyObject *obj, *texts, *reading;
    Py_ssize_t start, rows, max_rtts;
    if (!PyArg_ParseTuple(args, "OnnnOO", &obj, &start, &rows, &max_rtts, &texts, &reading))
        return NULL;
    if (!PyDict_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "mesh_rows: texts must be a dict");
        return NULL;
    }
    if (!PyType_Check(reading) || !PyType_IsSubtype((PyTypeObject *)reading, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "mesh_rows: reading must be a subclass of tuple");
        return NULL;
    }
    if (start < 0 || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "mesh_rows: negative start or rows");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)reading;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *s = (const unsigned char *)view.buf;
    Py_ssize_t size = view.len, at = start;
    /* (``rows`` is the field's own word: the tuple is no longer than the rows that fit; a row
     * past them is cut short, an error before its slot is filled) */
    Py_ssize_t fit = size > start ? (size - start) / MESH_ROW_SIZE : 0;
    PyObject *out = PyTuple_New(rows < fit ? rows : fit), *item = NULL;
    if (out == NULL)
        goto fail;
    for (Py_ssize_t k = 0; k < rows; k++) {
        if (at > size - MESH_ROW_SIZE) {
            PyErr_SetString(PyExc_ValueError, "mesh: cut inside a peer's row");
            goto fail;
        }
        const unsigned char *r = s + at;
        unsigned port = r[20] | (unsigned)r[21] << 8, answered = r[22] | (unsigned)r[23] << 8;
        unsigned lost = r[24] | (unsigned)r[25] << 8, listed = r[26] | (unsigned)r[27] << 8;
        at += MESH_ROW_SIZE;
        if (listed && (listed > answered || (Py_ssize_t)listed > max_rtts || (Py_ssize_t)listed * 4 > size - at)) {
            PyErr_Format(PyExc_ValueError, "mesh: %u RTTs listed for %u answers", listed, answered);
            goto fail;
        }
        char key_bytes[17];
        key_bytes[0] = (char)r[0];
        memcpy(key_bytes + 1, r + 4, 16);
        PyObject *key = PyBytes_FromStringAndSize(key_bytes, 17);
        if (key == NULL)
            goto fail;
        PyObject *address = PyDict_GetItemWithError(texts, key); /* borrowed */
        Py_DECREF(key);
        if (address == NULL) {
            if (PyErr_Occurred())
                goto fail;
            Py_DECREF(out);
            PyBuffer_Release(&view);
            Py_RETURN_NONE;
        }
        PyObject *rtts = PyTuple_New(listed);
        if (rtts == NULL)
            goto fail;
        for (unsigned j = 0; j < listed; j++, at += 4) {
            const unsigned char *u = s + at;
            uint32_t v = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
            PyObject *rtt = PyLong_FromUnsignedLong(v);
            if (rtt == NULL) {
                Py_DECREF(rtts);
                goto fail;
            }
            PyTuple_SET_ITEM(rtts, j, rtt);
        }
        item = type->tp_alloc(type, 5);
        if (item == NULL) {
            Py_DECREF(rtts);
            goto fail;
        }
        Py_INCREF(address);
        PyTuple_SET_ITEM(item, 0, address);
        PyTuple_SET_ITEM(item, 4, rtts);
        PyObject *numbers[3] = {PyLong_FromUnsignedLong(port), PyLong_FromUnsignedLong(answered),
                                PyLong_FromUnsignedLong(lost)};
        for (int j = 0; j < 3; j++) {
            if (numbers[j] == NULL) {
                for (int m = 0; m < 3; m++)
                    Py_XDECREF(numbers[m]);
                goto fail;
            }
        }
        for (int j = 0; j < 3; j++)
            PyTuple_SET_ITEM(item, j + 1, numbers[j]);
        PyTuple_SET_ITEM(out, k, item);
        item = NULL;
    }
    if (at != size) {
        PyErr_Format(PyExc_ValueError, "mesh: %zd bytes after its last row", size - at);
        goto fail;
    }
    PyBuffer_Release(&view);
    return out;
fail:
    Py_XDECREF(item);
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

/* an int of one digit (|v| < 2**30: the tables' counts) read in place, else 0 (PyLong_AsLong's:
 * a call a read, two or three reads a row) */
static inline int compact_long(PyObject *o, long *out) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o)) {
        *out = (long)PyUnstable_Long_CompactValue((PyLongObject *)o);
        return 1;
    }
#elif PY_VERSION_HEX >= 0x030B0000
    if (PyLong_CheckExact(o)) {
        Py_ssize_t size = Py_SIZE(o);
        if (size == 0 || size == 1 || size == -1) {
            *out = size * (long)((PyLongObject *)o)->ob_digit[0];
            return 1;
        }
    }
#else
    (void)o;
    (void)out;
#endif
    return 0;
}

/* list[i] (a list of ints, i checked) as a C long; -1 with an error set when it is not one */
static inline int item_long(PyObject *list, Py_ssize_t i, long *out) {
    if (i < 0 || i >= PyList_GET_SIZE(list)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    if (compact_long(PyList_GET_ITEM(list, i), out))
        return 0;
    long v = PyLong_AsLong(PyList_GET_ITEM(list, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* list[i] += d (its old value in *old) */
static inline int item_add(PyObject *list, Py_ssize_t i, long d, long *old) {
    long v;
    if (item_long(list, i, &v) < 0)
        return -1;
    PyObject *now = PyLong_FromLong(v + d);
    if (now == NULL)
        return -1;
    PyObject *was = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, now);
    Py_DECREF(was);
    if (old)
        *old = v;
    return 0;
}

/* list[i], itself a list; NULL with TypeError or IndexError */
static inline PyObject *item_list(PyObject *list, Py_ssize_t i) {
    if (i < 0 || i >= PyList_GET_SIZE(list)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return NULL;
    }
    PyObject *item = PyList_GET_ITEM(list, i);
    if (!PyList_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "expected PairIndex's tables (lists)");
        return NULL;
    }
    return item;
}

/* the tables the two passes share */
typedef struct {
    PyObject *probes, *row, *node_probes, *sums_of, *sa, *leaf_row, *leaf_ix, *alive;
    long long *np; /* node_probes as an array of 'q' (written in place: no int made a write), or NULL: a list */
    Py_ssize_t np_n;
    Py_buffer np_view;
} pool_tables;

/* the tables checked, node_probes's buffer held (tables_done releases it) */
static int tables_of(pool_tables *t, Py_ssize_t a) {
    if (!PyList_Check(t->probes) || !PyList_Check(t->sums_of) || !PyList_Check(t->leaf_row) ||
        !PyList_Check(t->leaf_ix) || (t->alive && !PyList_Check(t->alive))) {
        PyErr_SetString(PyExc_TypeError, "expected PairIndex's tables (lists)");
        return -1;
    }
    if ((t->row = item_list(t->probes, a)) == NULL || (t->sa = item_list(t->sums_of, a)) == NULL)
        return -1;
    t->np = NULL;
    if (!PyList_Check(t->node_probes)) {
        if (PyObject_GetBuffer(t->node_probes, &t->np_view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "expected PairIndex's tables (lists)");
            return -1;
        }
        const char *f = t->np_view.format ? t->np_view.format : "B";
        if (t->np_view.itemsize != 8 || strcmp(f, "q") != 0) {
            PyBuffer_Release(&t->np_view);
            PyErr_SetString(PyExc_TypeError, "expected PairIndex's tables (lists)");
            return -1;
        }
        t->np = t->np_view.buf;
        t->np_n = t->np_view.len / 8;
    }
    return 0;
}

static void tables_done(pool_tables *t) {
    if (t->np != NULL) {
        PyBuffer_Release(&t->np_view);
        t->np = NULL;
    }
}

/* node_probes[i] += d */
static inline int node_add(pool_tables *t, Py_ssize_t i, long d) {
    if (t->np == NULL)
        return item_add(t->node_probes, i, d, NULL);
    if (i < 0 || i >= t->np_n) {
        PyErr_SetString(PyExc_IndexError, "array index out of range");
        return -1;
    }
    t->np[i] += d;
    return 0;
}

/* pool_one's figures that ``put_frame`` adds up over a call and writes once at its end (a new
 * int each write otherwise: most of a row's cost): leaf_row[k][0] per leaf k, sums_of[a][2] */
typedef struct {
    long *leaf_d;
    Py_ssize_t *touched, n_touched;
    char *seen;
    long sa2;
    Py_ssize_t cap;  /* the leaves leaf_d, touched and seen hold */
} pool_acc;

/* pair (a, b) settled n more probes (n < 0: aged out), none lost: into the tables; its first
 * probe or its last counted in *pairs (``alive``: whether b is, NULL when known to be). With
 * ``acc``, leaf_row[k][0] and sums_of[a][2] are added up there (pool_apply writes them),
 * else written now */
static int pool_one(pool_tables *t, pool_acc *acc, Py_ssize_t a, Py_ssize_t b, long n, long *total,
                    long *pairs) {
    long old, k, back;
    if (item_add(t->row, b, n, &old) < 0)
        return -1;
    if (t->alive) {
        if (b >= PyList_GET_SIZE(t->alive)) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return -1;
        }
        int up = PyObject_IsTrue(PyList_GET_ITEM(t->alive, b));
        if (up < 0)
            return -1;
        if (!up)
            return 0;
    }
    if (node_add(t, b, n) < 0)
        return -1;
    *total += n;
    if (item_long(t->leaf_ix, b, &k) < 0)
        return -1;
    if (k < 0)
        k += PyList_GET_SIZE(t->leaf_row); /* (-1: no leaf, the row's last: its sink) */
    PyObject *cell = item_list(t->leaf_row, k);
    if (cell == NULL)
        return -1;
    if (acc == NULL) {
        if (item_add(cell, 0, n, NULL) < 0)
            return -1;
    } else {
        if (k >= acc->cap) {  /* (leaf_row grown since the call began: nothing can, but never past the scratch) */
            PyErr_SetString(PyExc_IndexError, "put_frame: a leaf beyond the leaves the call began with");
            return -1;
        }
        if (!acc->seen[k]) {
            acc->seen[k] = 1;
            acc->touched[acc->n_touched++] = k;
        }
        acc->leaf_d[k] += n;
    }
    long now = old + n;
    if (!old || !now) { /* the pair's first probe, or its last */
        long born = now ? 1 : -1;
        *pairs += born;
        PyObject *sb = item_list(t->sums_of, b), *them;
        if (sb == NULL || item_add(sb, 1, born, NULL) < 0)
            return -1;
        if ((them = item_list(t->probes, b)) == NULL || item_long(them, a, &back) < 0)
            return -1;
        if (!back) {
            if (acc != NULL)
                acc->sa2 += born;
            else if (item_add(t->sa, 2, born, NULL) < 0)
                return -1;
            if (item_add(sb, 2, born, NULL) < 0)
                return -1;
        }
    }
    return 0;
}

static PyObject *pool_entries_in(PyObject *args, pool_tables *tp) {
    PyObject *obj;
    Py_ssize_t at, a;
    int sign;
    if (!PyArg_ParseTuple(args, "OninOOOOOO", &obj, &at, &sign, &a, &tp->probes, &tp->alive, &tp->node_probes,
                          &tp->sums_of, &tp->leaf_row, &tp->leaf_ix))
        return NULL;
    if (tables_of(tp, a) < 0)
        return NULL;
    Py_buffer v;
    if (get_u32(obj, &v) < 0)
        return NULL;
    const uint32_t *e = v.buf;
    Py_ssize_t n = v.len / 4;
    long total = 0, pairs = 0;
    if (n % 3 || at < 0 || at % 3 || at > n) {
        PyErr_SetString(PyExc_ValueError, "pool_entries: not whole readings from a reading on");
        goto fail;
    }
    for (; at < n; at += 3) {
        if (e[at + 2])
            break; /* a lost probe: the caller's */
        if (pool_one(tp, NULL, a, (Py_ssize_t)e[at], sign * (long)e[at + 1], &total, &pairs) < 0)
            goto fail;
    }
    PyBuffer_Release(&v);
    return Py_BuildValue("(nll)", at, total, pairs);
fail:
    PyBuffer_Release(&v);
    return NULL;
}

static PyObject *pool_entries(PyObject *self, PyObject *args) {
    pool_tables t = {0};
    PyObject *out = pool_entries_in(args, &t);
    tables_done(&t);
    return out;
}

static PyObject *pool_readings_in(PyObject *args, pool_tables *tp) {
    PyObject *readings, *targets, *ids, *heard_obj, *kept, *added, *highest_obj;
    Py_ssize_t at, a, min_probes;
    if (!PyArg_ParseTuple(args, "OOOnnOOOOOOOnOO", &readings, &targets, &ids, &at, &a, &heard_obj, &tp->probes,
                          &tp->node_probes, &tp->sums_of, &tp->leaf_row, &tp->leaf_ix, &kept, &min_probes, &highest_obj,
                          &added))
        return NULL;
    if (!PyList_Check(targets) || !PyDict_Check(ids) || !PyDict_Check(kept) || !PyList_Check(added) ||
        !(PyList_Check(readings) || PyTuple_Check(readings))) {
        PyErr_SetString(PyExc_TypeError, "pool_readings: expected lists of readings and targets, dicts, a list");
        return NULL;
    }
    if (tables_of(tp, a) < 0)
        return NULL;
    long highest = PyLong_AsLong(highest_obj);
    if (highest == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer h;
    if (PyObject_GetBuffer(heard_obj, &h, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *heard = h.buf;
    PyObject **items = PySequence_Fast_ITEMS(readings);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(readings);
    long total = 0, pairs = 0;
    if (PyList_GET_SIZE(targets) < n)
        n = PyList_GET_SIZE(targets); /* (as zip) */
    if (at < 0)
        at = n;
    for (; at < n; at++) {
        PyObject *r = items[at], *number = PyDict_GetItemWithError(ids, PyList_GET_ITEM(targets, at));
        if (number == NULL && PyErr_Occurred())
            goto fail;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 5 || number == NULL || !PyLong_CheckExact(number))
            break;
        PyObject *rtts = PyTuple_GET_ITEM(r, 4);
        if (!PyLong_CheckExact(PyTuple_GET_ITEM(r, 2)) || !PyLong_CheckExact(PyTuple_GET_ITEM(r, 3)) ||
            !PyTuple_Check(rtts))
            break;
        Py_ssize_t b = PyLong_AsSsize_t(number);
        long answered = PyLong_AsLong(PyTuple_GET_ITEM(r, 2)), lost = PyLong_AsLong(PyTuple_GET_ITEM(r, 3));
        if (PyErr_Occurred()) { /* (beyond a C long: the caller's) */
            PyErr_Clear();
            break;
        }
        if (b == a)
            continue;
        if (lost || b < 0 || b >= h.len)
            break;
        if (!answered)
            continue; /* (no probe: passed by) */
        long old, top = highest;
        if (heard[b] != 255 || item_long(tp->row, b, &old) < 0 || old + answered >= min_probes)
            break;
        int in_kept = 0;
        if (PyDict_GET_SIZE(kept)) {
            PyObject *rows = PyDict_GetItemWithError(kept, number);
            if (rows == NULL && PyErr_Occurred())
                goto fail;
            in_kept = rows != NULL;
        }
        if (in_kept)
            break;
        Py_ssize_t m = PyTuple_GET_SIZE(rtts), j;
        for (j = 0; j < m; j++) {
            PyObject *rtt = PyTuple_GET_ITEM(rtts, j);
            if (!PyLong_CheckExact(rtt))
                break;
            long v = PyLong_AsLong(rtt);
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                break;
            }
            if (v > top)
                top = v;
        }
        if (j < m)
            break; /* (RTTs not ints of a C long: the caller's) */
        if (pool_one(tp, NULL, a, b, answered, &total, &pairs) < 0)
            goto fail;
        highest = top;
        PyObject *zero = PyLong_FromLong(0), *count = PyTuple_GET_ITEM(r, 2);
        if (zero == NULL || PyList_Append(added, number) < 0 || PyList_Append(added, count) < 0 ||
            PyList_Append(added, zero) < 0) {
            Py_XDECREF(zero);
            goto fail;
        }
        Py_DECREF(zero);
    }
    PyBuffer_Release(&h);
    return Py_BuildValue("(nlll)", at, total, pairs, highest);
fail:
    PyBuffer_Release(&h);
    return NULL;
}

static PyObject *pool_readings(PyObject *self, PyObject *args) {
    pool_tables t = {0};
    PyObject *out = pool_readings_in(args, &t);
    tables_done(&t);
    return out;
}

/* --- a mesh field's rows taken as they are packed (collectors/mesh.py MeshRows) ------------ */

/* row r's peer's address as 17 bytes into ``key``: 4 and 12 zero bytes and the address for
 * IPv4 and IPv4-mapped IPv6 (as its text is IPv4), 6 and the address for other IPv6; -1 with
 * ValueError for another family */
static int endpoint_key(const unsigned char *r, unsigned char *key) {
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    unsigned family = r[0];
    const unsigned char *addr = r + 4;
    if (family == 2 || (family == 10 && memcmp(addr, mapped, 12) == 0)) {
        key[0] = 4;
        memset(key + 1, 0, 12);
        memcpy(key + 13, family == 2 ? addr : addr + 12, 4);
        return 0;
    }
    if (family == 10) {
        key[0] = 6;
        memcpy(key + 1, addr, 16);
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "mesh: address family %u", family);
    return -1;
}

/* the offset after row ``at``'s RTTs, or -1 with ValueError as mesh_rows's */
static Py_ssize_t row_end(const unsigned char *s, Py_ssize_t size, Py_ssize_t at, Py_ssize_t max_rtts) {
    if (at > size - MESH_ROW_SIZE) {
        PyErr_SetString(PyExc_ValueError, "mesh: cut inside a peer's row");
        return -1;
    }
    const unsigned char *r = s + at;
    unsigned answered = r[22] | (unsigned)r[23] << 8, listed = r[26] | (unsigned)r[27] << 8;
    at += MESH_ROW_SIZE;
    if (listed && (listed > answered || (Py_ssize_t)listed > max_rtts || (Py_ssize_t)listed * 4 > size - at)) {
        PyErr_Format(PyExc_ValueError, "mesh: %u RTTs listed for %u answers", listed, answered);
        return -1;
    }
    return at + 4 * (Py_ssize_t)listed;
}

static PyObject *mesh_check(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, rows, max_rtts;
    if (!PyArg_ParseTuple(args, "Onnn", &obj, &start, &rows, &max_rtts))
        return NULL;
    if (start < 0 || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "mesh_check: negative start or rows");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *s = view.buf;
    Py_ssize_t at = start;
    for (Py_ssize_t k = 0; k < rows; k++) {
        Py_ssize_t next = row_end(s, view.len, at, max_rtts);
        if (next < 0)
            goto fail;
        if (s[at] != 2 && s[at] != 10) {
            PyErr_Format(PyExc_ValueError, "mesh: address family %u", s[at]);
            goto fail;
        }
        at = next;
    }
    if (at != view.len) {
        PyErr_Format(PyExc_ValueError, "mesh: %zd bytes after its last row", view.len - at);
        goto fail;
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *one_int; /* array('i', [0]) */

static PyObject *mesh_targets(PyObject *self, PyObject *args) {
    PyObject *obj, *at_port, *places = NULL, *missing = NULL;
    Py_ssize_t start, rows;
    if (!PyArg_ParseTuple(args, "OnnO", &obj, &start, &rows, &at_port))
        return NULL;
    if (!PyList_Check(at_port) || PyList_GET_SIZE(at_port) != 65536) {
        PyErr_SetString(PyExc_TypeError, "mesh_targets: at_port must be a list of 65536");
        return NULL;
    }
    if (start < 0 || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "mesh_targets: negative start or rows");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *s = view.buf;
    int *out;
    if (rows > view.len / MESH_ROW_SIZE) {
        PyErr_SetString(PyExc_ValueError, "mesh: cut inside a peer's row");
        goto fail;
    }
    if ((places = new_array(one_int, 2 * rows, (void **)&out)) == NULL)
        goto fail;
    Py_ssize_t at = start;
    for (Py_ssize_t k = 0; k < rows; k++) {
        Py_ssize_t next = row_end(s, view.len, at, INT32_MAX);
        unsigned char key[17];
        if (next < 0 || endpoint_key(s + at, key) < 0)
            goto fail;
        if (next > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "mesh: rows beyond 2 GB");
            goto fail;
        }
        unsigned port = s[at + 20] | (unsigned)s[at + 21] << 8;
        PyObject *peers = PyList_GET_ITEM(at_port, port);
        long b = -2;
        if (PyDict_Check(peers)) { /* {key: number} of the many nodes on this port */
            PyObject *k17 = PyBytes_FromStringAndSize((const char *)key, 17), *number;
            if (k17 == NULL)
                goto fail;
            number = PyDict_GetItemWithError(peers, k17); /* borrowed */
            Py_DECREF(k17);
            if (number == NULL && PyErr_Occurred())
                goto fail;
            if (number != NULL && PyLong_CheckExact(number)) {
                b = PyLong_AsLong(number);
                if ((b == -1 && PyErr_Occurred()) || b < -1 || b > INT32_MAX) { /* (beyond a long: as the twin) */
                    PyErr_Clear();
                    b = -2;
                }
            }
        } else if (PyTuple_Check(peers)) { /* (key, number, key, number, ...) of the few nodes on this port */
            Py_ssize_t m = PyTuple_GET_SIZE(peers);
            for (Py_ssize_t j = 0; j + 1 < m; j += 2) {
                PyObject *known = PyTuple_GET_ITEM(peers, j), *number = PyTuple_GET_ITEM(peers, j + 1);
                if (PyBytes_Check(known) && PyBytes_GET_SIZE(known) == 17 &&
                    memcmp(PyBytes_AS_STRING(known), key, 17) == 0) {
                    if (PyLong_CheckExact(number)) {
                        b = PyLong_AsLong(number);
                        if ((b == -1 && PyErr_Occurred()) || b < -1 || b > INT32_MAX) {
                            PyErr_Clear();
                            b = -2;
                        }
                    }
                    break;
                }
            }
        }
        if (b == -2) {
            if (missing == NULL && (missing = PyList_New(0)) == NULL)
                goto fail;
            PyObject *item = Py_BuildValue("(nIy#)", k, port, (const char *)key, (Py_ssize_t)17);
            if (item == NULL || PyList_Append(missing, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        }
        out[2 * k] = (int)b;
        out[2 * k + 1] = (int)at;
        at = next;
    }
    PyBuffer_Release(&view);
    if (missing == NULL) {
        missing = Py_None;
        Py_INCREF(missing);
    }
    return Py_BuildValue("(NN)", places, missing);
fail:
    Py_XDECREF(places);
    Py_XDECREF(missing);
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *pool_rows_in(PyObject *args, pool_tables *tp) {
    PyObject *obj, *places_obj, *heard_obj, *kept, *entries = NULL;
    Py_ssize_t at, a, min_probes;
    long highest;
    if (!PyArg_ParseTuple(args, "OOnnOOOOOOOnl", &obj, &places_obj, &at, &a, &heard_obj, &tp->probes, &tp->node_probes,
                          &tp->sums_of, &tp->leaf_row, &tp->leaf_ix, &kept, &min_probes, &highest))
        return NULL;
    if (!PyDict_Check(kept)) {
        PyErr_SetString(PyExc_TypeError, "pool_rows: kept must be a dict");
        return NULL;
    }
    if (tables_of(tp, a) < 0)
        return NULL;
    Py_buffer v, p, h;
    if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    if (get_typed(places_obj, &p, 4, "i", "pool_rows: places must be an array of 'i'") < 0) {
        PyBuffer_Release(&v);
        return NULL;
    }
    if (PyObject_GetBuffer(heard_obj, &h, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&p);
        PyBuffer_Release(&v);
        return NULL;
    }
    const unsigned char *s = v.buf, *heard = h.buf;
    const int *places = p.buf;
    Py_ssize_t n = p.len / 8, count = 0;
    long total = 0, pairs = 0;
    if (at < 0)
        at = n;
    if ((entries = PyBytes_FromStringAndSize(NULL, (n > at ? n - at : 0) * 12)) == NULL)
        goto fail;
    uint32_t *e = (uint32_t *)PyBytes_AS_STRING(entries);
    for (; at < n; at++) {
        long b = places[2 * at];
        Py_ssize_t off = places[2 * at + 1];
        if (b == -1 || b == a)
            continue; /* (no node answers there, or the prober itself: passed by) */
        if (b < 0 || b >= h.len || off < 0 || off > v.len - MESH_ROW_SIZE)
            break;
        const unsigned char *r = s + off;
        unsigned answered = r[22] | (unsigned)r[23] << 8, lost = r[24] | (unsigned)r[25] << 8;
        unsigned listed = r[26] | (unsigned)r[27] << 8;
        if (lost || (Py_ssize_t)listed * 4 > v.len - off - MESH_ROW_SIZE)
            break;
        if (!answered)
            continue; /* (no probe: passed by) */
        long old, top = highest;
        if (heard[b] != 255 || item_long(tp->row, b, &old) < 0 || old + (long)answered >= min_probes)
            break;
        if (PyDict_GET_SIZE(kept)) {
            PyObject *number = PyLong_FromLong(b);
            if (number == NULL)
                goto fail;
            PyObject *rows = PyDict_GetItemWithError(kept, number);
            Py_DECREF(number);
            if (rows != NULL)
                break;
            if (PyErr_Occurred())
                goto fail;
        }
        for (unsigned j = 0; j < listed; j++) {
            const unsigned char *u = r + MESH_ROW_SIZE + 4 * j;
            long rtt = (long)((uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24);
            if (rtt > top)
                top = rtt;
        }
        if (pool_one(tp, NULL, a, b, (long)answered, &total, &pairs) < 0)
            goto fail;
        highest = top;
        e[3 * count] = (uint32_t)b;
        e[3 * count + 1] = answered;
        e[3 * count + 2] = 0;
        count++;
    }
    if (PyErr_Occurred())
        goto fail;
    if (_PyBytes_Resize(&entries, count * 12) < 0)
        goto fail;
    PyBuffer_Release(&h);
    PyBuffer_Release(&p);
    PyBuffer_Release(&v);
    return Py_BuildValue("(nlllN)", at, total, pairs, highest, entries);
fail:
    Py_XDECREF(entries);
    PyBuffer_Release(&h);
    PyBuffer_Release(&p);
    PyBuffer_Release(&v);
    return NULL;
}

static PyObject *pool_rows(PyObject *self, PyObject *args) {
    pool_tables t = {0};
    PyObject *out = pool_rows_in(args, &t);
    tables_done(&t);
    return out;
}

/* --- a frame's put-in and its prober's due frames aged out, in one call ------------------- */


/* what ``acc`` added up, and the prober's own (``total``, ``pairs``), into the tables */
static int pool_apply(pool_tables *t, pool_acc *acc, Py_ssize_t a, PyObject *sums, long total, long pairs) {
    for (Py_ssize_t j = 0; j < acc->n_touched; j++) {
        Py_ssize_t k = acc->touched[j];
        long d = acc->leaf_d[k];
        acc->leaf_d[k] = 0;
        acc->seen[k] = 0;
        PyObject *cell;
        if (d && ((cell = item_list(t->leaf_row, k)) == NULL || item_add(cell, 0, d, NULL) < 0))
            return -1;
    }
    acc->n_touched = 0;
    if (acc->sa2 && item_add(t->sa, 2, acc->sa2, NULL) < 0)
        return -1;
    acc->sa2 = 0;
    if (total && (node_add(t, a, total) < 0 || item_add(sums, 0, total, NULL) < 0))
        return -1;
    if (pairs && item_add(t->sa, 1, pairs, NULL) < 0)
        return -1;
    return 0;
}

/* list ``frame`` as MeshWindow keeps one: [mono_s, array of 'I', highest]; 0, or -1 with TypeError */
static int frame_check(PyObject *frame) {
    if (!PyList_Check(frame) || PyList_GET_SIZE(frame) != 3) {
        PyErr_SetString(PyExc_TypeError, "put_frame: a frame must be a list [mono_s, entries, highest]");
        return -1;
    }
    return 0;
}

/* the frame's entries: ``*lost`` whether one lost a probe; -1 with an error when not an array of 'I' */
static int entries_lost(PyObject *entries, int *lost) {
    Py_buffer v;
    if (get_u32(entries, &v) < 0)
        return -1;
    const uint32_t *e = v.buf;
    Py_ssize_t n = v.len / 4;
    *lost = 0;
    if (n % 3) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "put_frame: entries not whole readings");
        return -1;
    }
    for (Py_ssize_t j = 2; j < n; j += 3)
        if (e[j]) {
            *lost = 1;
            break;
        }
    PyBuffer_Release(&v);
    return 0;
}

static PyObject *str_popleft, *str_append, *str_frombytes, *one_u32;

/* a op b as Python compares them (two floats: as doubles, no call) */
static inline int compare(PyObject *a, PyObject *b, int op) {
    if (PyFloat_CheckExact(a) && PyFloat_CheckExact(b)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return op == Py_LE ? x <= y : x == y;
    }
    return PyObject_RichCompareBool(a, b, op);
}

/* tops[a]: a frame of highest ``highest`` left (MeshWindow._age's) */
static int top_left(PyObject *tops, PyObject *a_obj, long highest) {
    PyObject *top = PyDict_GetItemWithError(tops, a_obj); /* borrowed */
    long best, count;
    if (top == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyList_Check(top)) {
        PyErr_SetString(PyExc_TypeError, "put_frame: tops must hold lists [highest, count]");
        return -1;
    }
    if (!highest || item_long(top, 0, &best) < 0 || highest != best)
        return PyErr_Occurred() ? -1 : 0;
    if (item_add(top, 1, -1, &count) < 0)
        return -1;
    if (count - 1 == 0 && PyDict_DelItem(tops, a_obj) < 0)
        return -1;
    return 0;
}

/* tops[a]: a frame's highest raised to ``highest`` (MeshWindow._raise's) */
static int top_raised(PyObject *tops, PyObject *a_obj, long highest) {
    PyObject *top = PyDict_GetItemWithError(tops, a_obj);
    long best;
    if (top == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyList_Check(top)) {
        PyErr_SetString(PyExc_TypeError, "put_frame: tops must hold lists [highest, count]");
        return -1;
    }
    if (item_long(top, 0, &best) < 0)
        return -1;
    if (highest > best) {
        PyObject *h = PyLong_FromLong(highest);
        if (h == NULL || PyList_SetItem(top, 0, h) < 0) /* (PyList_SetItem steals, even when it fails) */
            return -1;
        PyObject *one = PyLong_FromLong(1);
        if (one == NULL || PyList_SetItem(top, 1, one) < 0)
            return -1;
    } else if (highest == best && item_add(top, 1, 1, NULL) < 0) {
        return -1;
    }
    return 0;
}

static PyObject *put_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 16) {
        PyErr_SetString(PyExc_TypeError, "put_frame: 16 arguments");
        return NULL;
    }
    PyObject *frames = args[0], *since = args[1], *mono_s = args[2], *value = args[3], *places_obj = args[4];
    PyObject *a_obj = args[5], *heard_obj = args[6], *sums = args[11], *tops = args[12];
    PyObject *frame = NULL, *out = NULL;
    pool_tables t = {.probes = args[7], .alive = args[8], .node_probes = args[9], .sums_of = args[10],
                     .leaf_row = args[13], .leaf_ix = args[14]};
    Py_ssize_t a = PyLong_AsSsize_t(a_obj);
    if (a == -1 && PyErr_Occurred())
        return NULL;
    long min_probes = PyLong_AsLong(args[15]);
    if (min_probes == -1 && PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(tops) || !PyList_Check(sums)) {
        PyErr_SetString(PyExc_TypeError, "put_frame: tops must be a dict, sums a list");
        return NULL;
    }
    if (tables_of(&t, a) < 0)
        return NULL;
    Py_ssize_t n_leaf = PyList_GET_SIZE(t.leaf_row);
    long leaf_d_[64];
    Py_ssize_t touched_[64];
    char seen_[64];
    pool_acc acc = {leaf_d_, touched_, 0, seen_, 0, n_leaf};
    if (n_leaf > 64) {
        acc.leaf_d = PyMem_Calloc(n_leaf, sizeof(long));
        acc.touched = PyMem_Calloc(n_leaf, sizeof(Py_ssize_t));
        acc.seen = PyMem_Calloc(n_leaf, 1);
        if (acc.leaf_d == NULL || acc.touched == NULL || acc.seen == NULL) {
            PyErr_NoMemory();
            goto done_alloc;
        }
    } else {
        memset(leaf_d_, 0, sizeof leaf_d_);
        memset(seen_, 0, sizeof seen_);
    }
    long total = 0, pairs = 0, all_pairs = 0;
    Py_ssize_t at = -1;
    int cmp;
    /* 1. its frames of ``since`` or before leave, the oldest first, up to one that lost a probe */
    for (;;) {
        Py_ssize_t count = PySequence_Size(frames);
        if (count < 0)
            goto fail;
        if (count == 0)
            break;
        if ((frame = PySequence_GetItem(frames, 0)) == NULL || frame_check(frame) < 0)
            goto fail;
        if ((cmp = compare(PyList_GET_ITEM(frame, 0), since, Py_LE)) < 0)
            goto fail;
        if (!cmp)
            break;
        int lost;
        long highest;
        if (entries_lost(PyList_GET_ITEM(frame, 1), &lost) < 0)
            goto fail;
        if (lost)
            goto applied; /* (the caller's: at -1) */
        if (item_long(frame, 2, &highest) < 0)
            goto fail;
        PyObject *gone = PyObject_CallMethodNoArgs(frames, str_popleft);
        if (gone == NULL)
            goto fail;
        Py_DECREF(gone);
        if (top_left(tops, a_obj, highest) < 0)
            goto fail;
        Py_buffer v;
        if (get_u32(PyList_GET_ITEM(frame, 1), &v) < 0)
            goto fail;
        const uint32_t *e = v.buf;
        Py_ssize_t n = v.len / 4;
        for (Py_ssize_t j = 0; j < n; j += 3)
            if (pool_one(&t, &acc, a, (Py_ssize_t)e[j], -(long)e[j + 1], &total, &pairs) < 0) {
                PyBuffer_Release(&v);
                goto fail;
            }
        PyBuffer_Release(&v);
        Py_CLEAR(frame);
    }
    Py_CLEAR(frame);
    /* 2. the frame of ``mono_s``: its common rows in, as pool_rows's (the prober keeps no pair) */
    {
        t.alive = NULL;
        Py_ssize_t count = PySequence_Size(frames);
        if (count < 0)
            goto fail;
        if (count > 0) {
            if ((frame = PySequence_GetItem(frames, count - 1)) == NULL || frame_check(frame) < 0)
                goto fail;
            if ((cmp = compare(PyList_GET_ITEM(frame, 0), mono_s, Py_EQ)) < 0)
                goto fail;
            if (!cmp)
                Py_CLEAR(frame);
        }
        Py_buffer v, p, h;
        if (PyObject_GetBuffer(value, &v, PyBUF_SIMPLE) < 0)
            goto fail;
        if (get_typed(places_obj, &p, 4, "i", "put_frame: places must be an array of 'i'") < 0) {
            PyBuffer_Release(&v);
            goto fail;
        }
        if (PyObject_GetBuffer(heard_obj, &h, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&p);
            PyBuffer_Release(&v);
            goto fail;
        }
        const unsigned char *s = v.buf, *heard = h.buf;
        const int *places = p.buf;
        Py_ssize_t n = p.len / 8, got = 0;
        long highest = 0, was = 0;
        uint32_t *e = PyMem_Malloc((n ? n : 1) * 12), *into;
        PyObject *entries = NULL;
        if (e == NULL) {
            PyErr_NoMemory();
            goto rows_fail;
        }
        if (frame != NULL && item_long(frame, 2, &was) < 0)
            goto rows_fail;
        highest = was;
        for (at = 0; at < n; at++) {
            long b = places[2 * at];
            Py_ssize_t off = places[2 * at + 1];
            if (b == -1 || b == a)
                continue;
            if (b < 0 || b >= h.len || off < 0 || off > v.len - MESH_ROW_SIZE)
                break;
            const unsigned char *r = s + off;
            unsigned answered = r[22] | (unsigned)r[23] << 8, lost = r[24] | (unsigned)r[25] << 8;
            unsigned listed = r[26] | (unsigned)r[27] << 8;
            if (lost || (Py_ssize_t)listed * 4 > v.len - off - MESH_ROW_SIZE)
                break;
            if (!answered)
                continue;
            long old, top = highest;
            if (heard[b] != 255 || item_long(t.row, b, &old) < 0 || old + (long)answered >= min_probes)
                break;
            for (unsigned j = 0; j < listed; j++) {
                const unsigned char *u = r + MESH_ROW_SIZE + 4 * j;
                long rtt = (long)((uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24);
                if (rtt > top)
                    top = rtt;
            }
            if (pool_one(&t, &acc, a, b, (long)answered, &total, &pairs) < 0)
                goto rows_fail;
            highest = top;
            e[3 * got] = (uint32_t)b;
            e[3 * got + 1] = answered;
            e[3 * got + 2] = 0;
            got++;
        }
        if (PyErr_Occurred())
            goto rows_fail;
        if (frame == NULL) { /* a new frame: [mono_s, its entries, highest] at the end of ``frames`` */
            if ((entries = new_array(one_u32, 3 * got, (void **)&into)) == NULL)
                goto rows_fail;
            memcpy(into, e, 12 * got);
            PyObject *zero = PyLong_FromLong(0);
            if (zero == NULL || (frame = PyList_New(3)) == NULL) {
                Py_XDECREF(zero);
                goto rows_fail;
            }
            Py_INCREF(mono_s);
            PyList_SET_ITEM(frame, 0, mono_s);
            PyList_SET_ITEM(frame, 1, entries);
            PyList_SET_ITEM(frame, 2, zero);
            entries = NULL;
            PyObject *r = PyObject_CallMethodOneArg(frames, str_append, frame);
            if (r == NULL)
                goto rows_fail;
            Py_DECREF(r);
        } else if (got) {
            if ((entries = PyBytes_FromStringAndSize((const char *)e, 12 * got)) == NULL)
                goto rows_fail;
            PyObject *r = PyObject_CallMethodOneArg(PyList_GET_ITEM(frame, 1), str_frombytes, entries);
            if (r == NULL)
                goto rows_fail;
            Py_DECREF(r);
            Py_CLEAR(entries);
        }
        if (highest > was) {
            if (top_raised(tops, a_obj, highest) < 0)
                goto rows_fail;
            PyObject *h2 = PyLong_FromLong(highest);
            if (h2 == NULL || PyList_SetItem(frame, 2, h2) < 0)
                goto rows_fail;
        }
        PyMem_Free(e);
        PyBuffer_Release(&h);
        PyBuffer_Release(&p);
        PyBuffer_Release(&v);
        goto applied;
    rows_fail:
        Py_XDECREF(entries);
        PyMem_Free(e);
        PyBuffer_Release(&h);
        PyBuffer_Release(&p);
        PyBuffer_Release(&v);
        goto fail;
    }
applied:
    all_pairs = pairs;
    if (pool_apply(&t, &acc, a, sums, total, pairs) < 0)
        goto fail;
    PyObject *at_obj = PyLong_FromSsize_t(at), *pairs_obj = at_obj ? PyLong_FromLong(all_pairs) : NULL;
    if (pairs_obj != NULL && (out = PyTuple_New(2)) != NULL) {
        PyTuple_SET_ITEM(out, 0, at_obj);
        PyTuple_SET_ITEM(out, 1, pairs_obj);
    } else {
        Py_XDECREF(at_obj);
        Py_XDECREF(pairs_obj);
    }
fail:
    Py_XDECREF(frame);
done_alloc:
    tables_done(&t);
    if (n_leaf > 64) {
        PyMem_Free(acc.leaf_d);
        PyMem_Free(acc.touched);
        PyMem_Free(acc.seen);
    }
    return out;
}


/* ---- the "peers" field (collectors/peers.py) and its flow rates (model/flows.py) ---- */

#define PEER_HEAD_SIZE 28 /* protocol.PEER_HEAD "<BBHIIIId": status, flags, errno, sockets, seen, rows, addrs, mono */
#define PEER_ROW_SIZE 64  /* protocol.PEER_ROW "<B3xI16sQQQQII" */
#define PEER_ADDR_SIZE 20 /* protocol.PEER_ADDR "<B3x16s" */
#define PEER_KEY_SIZE 17  /* a row's family and its 16 address bytes */

static inline uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static inline int peer_key_is(const unsigned char *key, const unsigned char *row) {
    return key[0] == row[0] && memcmp(key + 1, row + 8, 16) == 0;
}

static PyObject *peer_like(PyObject *self, PyObject *args) {
    PyObject *obj, *keys, *tail, *addresses, *counters;
    if (!PyArg_ParseTuple(args, "OSSOO", &obj, &keys, &tail, &addresses, &counters))
        return NULL;
    if (!PyTuple_Check(addresses)) {
        PyErr_SetString(PyExc_TypeError, "peer_like: addresses must be a tuple");
        return NULL;
    }
    if (!PyType_Check(counters) || !PyType_IsSubtype((PyTypeObject *)counters, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "peer_like: counters must be a subclass of tuple");
        return NULL;
    }
    Py_ssize_t rows = PyTuple_GET_SIZE(addresses), tail_len = PyBytes_GET_SIZE(tail);
    if (PyBytes_GET_SIZE(keys) != rows * PEER_KEY_SIZE) {
        PyErr_SetString(PyExc_ValueError, "peer_like: keys must be 17 bytes an address");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)counters;
    const unsigned char *k = (const unsigned char *)PyBytes_AS_STRING(keys);
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *s = (const unsigned char *)view.buf;
    Py_ssize_t rows_end = PEER_HEAD_SIZE + rows * PEER_ROW_SIZE;
    PyObject *peers = NULL, *out = NULL;
    double mono;
    if (view.len != rows_end + tail_len || s[0] != 0 || le32(s + 12) != (uint64_t)rows
        || (uint64_t)le32(s + 16) * PEER_ADDR_SIZE != (uint64_t)tail_len
        || memcmp(s + rows_end, PyBytes_AS_STRING(tail), tail_len) != 0)
        goto none;
    uint64_t mono_bits = le64(s + 20);
    memcpy(&mono, &mono_bits, sizeof mono);
    if (mono != mono)
        goto none;
    peers = PyTuple_New(rows);
    if (peers == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < rows; i++) {
        const unsigned char *r = s + PEER_HEAD_SIZE + i * PEER_ROW_SIZE;
        Py_ssize_t j = i; /* (the row the layout had here, mostly; else wherever its address is) */
        if (!peer_key_is(k + j * PEER_KEY_SIZE, r)) {
            for (j = 0; j < rows && !peer_key_is(k + j * PEER_KEY_SIZE, r); j++)
                ;
            if (j == rows)
                goto none;
        }
        PyObject *item = type->tp_alloc(type, 8);
        if (item == NULL)
            goto fail;
        PyTuple_SET_ITEM(peers, i, item);
        PyObject *address = PyTuple_GET_ITEM(addresses, j);
        Py_INCREF(address);
        PyTuple_SET_ITEM(item, 0, address);
        /* sockets, sent, received, retrans, delivery, rtt, rtt_max */
        PyObject *v[7] = {PyLong_FromUnsignedLong(le32(r + 4)), PyLong_FromUnsignedLongLong(le64(r + 24)),
                          PyLong_FromUnsignedLongLong(le64(r + 32)), PyLong_FromUnsignedLongLong(le64(r + 40)),
                          PyLong_FromUnsignedLongLong(le64(r + 48)), PyLong_FromUnsignedLong(le32(r + 56)),
                          PyLong_FromUnsignedLong(le32(r + 60))};
        int bad = 0;
        for (int m = 0; m < 7; m++)
            bad |= v[m] == NULL;
        if (bad) {
            for (int m = 0; m < 7; m++)
                Py_XDECREF(v[m]);
            goto fail;
        }
        for (int m = 0; m < 7; m++)
            PyTuple_SET_ITEM(item, m + 1, v[m]);
    }
    out = PyTuple_New(5);
    PyObject *head[4] = {PyLong_FromUnsignedLong(s[1]), PyLong_FromUnsignedLong(le32(s + 4)),
                         PyLong_FromUnsignedLong(le32(s + 8)), PyFloat_FromDouble(mono)};
    if (out == NULL || head[0] == NULL || head[1] == NULL || head[2] == NULL || head[3] == NULL) {
        for (int m = 0; m < 4; m++)
            Py_XDECREF(head[m]);
        goto fail;
    }
    for (int m = 0; m < 4; m++)
        PyTuple_SET_ITEM(out, m, head[m]);
    PyTuple_SET_ITEM(out, 4, peers);
    PyBuffer_Release(&view);
    return out;
none:
    Py_XDECREF(peers);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    Py_XDECREF(peers);
    PyBuffer_Release(&view);
    return NULL;
}

/* an exact int in 0..2**64-1, else 0 (and no error set) */
static inline int u64_of(PyObject *o, uint64_t *out) {
    if (!PyLong_CheckExact(o))
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* a row as flow rates read it: a tuple (exactly, or of ``counters``) of 8 whose address is a str (exactly) */
static inline int peer_row(PyObject *row, PyTypeObject *counters) {
    return (PyTuple_CheckExact(row) || Py_TYPE(row) == counters) && PyTuple_GET_SIZE(row) == 8
           && PyUnicode_CheckExact(PyTuple_GET_ITEM(row, 0));
}

/* {address: row} of ``before``, the last row of an address kept; NULL with no error: not rows */
static PyObject *peer_rows_by_address(PyObject *before, PyTypeObject *counters) {
    PyObject *by = PyDict_New();
    if (by == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(before); i++) {
        PyObject *p = PyTuple_GET_ITEM(before, i);
        if (!peer_row(p, counters) || PyDict_SetItem(by, PyTuple_GET_ITEM(p, 0), p) < 0) {
            Py_DECREF(by);
            return NULL;
        }
    }
    return by;
}

static inline PyObject *rate_or_none(int known, double v) {
    if (!known)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(v);
}

#define MAX_BYTES_PER_S 1e12
#define MAX_RTT_US 600000000ULL

static PyObject *peer_rates(PyObject *self, PyObject *args) {
    PyObject *before, *peers, *dt_obj, *counters_obj, *rates_obj;
    int positional;
    if (!PyArg_ParseTuple(args, "OOOpOO", &before, &peers, &dt_obj, &positional, &counters_obj, &rates_obj))
        return NULL;
    if (!PyType_Check(counters_obj) || !PyType_Check(rates_obj)
        || !PyType_IsSubtype((PyTypeObject *)rates_obj, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "peer_rates: counters must be a type, rates a subclass of tuple");
        return NULL;
    }
    if (!PyTuple_CheckExact(before) || !PyTuple_CheckExact(peers) || !PyFloat_CheckExact(dt_obj))
        Py_RETURN_NONE;
    PyTypeObject *counters = (PyTypeObject *)counters_obj, *rates_type = (PyTypeObject *)rates_obj;
    double dt = PyFloat_AS_DOUBLE(dt_obj), top = INFINITY;
    Py_ssize_t known = PyTuple_GET_SIZE(before), n = PyTuple_GET_SIZE(peers), rows = 0;
    PyObject *by_address = NULL, *rates = PyDict_New(), *out = NULL;
    int ordered = 1;
    if (rates == NULL)
        return NULL;
    if (!positional && (by_address = peer_rows_by_address(before, counters)) == NULL)
        goto none_or_fail;
    for (; rows < n; rows++) {
        PyObject *row = PyTuple_GET_ITEM(peers, rows), *b = NULL;
        if (!peer_row(row, counters))
            goto none;
        PyObject *address = PyTuple_GET_ITEM(row, 0);
        if (by_address == NULL) {
            b = rows < known ? PyTuple_GET_ITEM(before, rows) : NULL;
            if (b != NULL && !peer_row(b, counters))
                goto none;
            int same = 0;
            if (b != NULL && (same = PyObject_RichCompareBool(PyTuple_GET_ITEM(b, 0), address, Py_EQ)) < 0)
                goto fail;
            if (!same) {
                if ((by_address = peer_rows_by_address(before, counters)) == NULL)
                    goto none_or_fail;
                b = NULL;
            }
        }
        if (by_address != NULL && b == NULL && (b = PyDict_GetItemWithError(by_address, address)) == NULL
            && PyErr_Occurred())
            goto fail;
        uint64_t sent, received, retrans, delivery, rtt;
        PyObject **it = &PyTuple_GET_ITEM(row, 0);
        if (!u64_of(it[2], &sent) || !u64_of(it[3], &received) || !u64_of(it[4], &retrans)
            || !u64_of(it[5], &delivery) || !u64_of(it[6], &rtt))
            goto none;
        int tx_known = 0, rx_known = 0, re_known = 0;
        double tx = 0.0, rx = 0.0, re = 0.0, total = 0.0;
        if (b != NULL) {
            uint64_t b_sent, b_received, b_retrans;
            PyObject **bt = &PyTuple_GET_ITEM(b, 0);
            if (!u64_of(bt[2], &b_sent) || !u64_of(bt[3], &b_received) || !u64_of(bt[4], &b_retrans) || dt == 0.0)
                goto none; /* (dt 0: Python's ZeroDivisionError, left to it) */
            if (sent >= b_sent) {
                tx = (double)(sent - b_sent) / dt;
                tx_known = !(tx > MAX_BYTES_PER_S);
            }
            if (received >= b_received) {
                rx = (double)(received - b_received) / dt;
                rx_known = !(rx > MAX_BYTES_PER_S);
            }
            if (retrans >= b_retrans) {
                re = (double)(retrans - b_retrans) / dt;
                re_known = !(re > MAX_BYTES_PER_S);
            }
            total = (tx_known && tx != 0.0 ? tx : 0.0) + (rx_known && rx != 0.0 ? rx : 0.0);
        }
        PyObject *item = rates_type->tp_alloc(rates_type, 6);
        if (item == NULL)
            goto fail;
        PyObject *v[6] = {rate_or_none(tx_known, tx), rate_or_none(rx_known, rx),
                          rate_or_none(0 < rtt && rtt <= MAX_RTT_US, (double)rtt / 1e6), rate_or_none(re_known, re),
                          it[1], rate_or_none(0 < delivery && delivery <= 1000000000000ULL, (double)delivery)};
        Py_INCREF(it[1]);
        int bad = 0;
        for (int m = 0; m < 6; m++) {
            bad |= v[m] == NULL;
            PyTuple_SET_ITEM(item, m, v[m]);
        }
        if (bad || PyDict_SetItem(rates, address, item) < 0) {
            Py_DECREF(item);
            goto fail;
        }
        Py_DECREF(item);
        if (total > top)
            ordered = 0;
        top = total;
    }
    out = Py_BuildValue("(OOO)", rates, ordered ? Py_True : Py_False,
                        PyDict_GET_SIZE(rates) == rows ? Py_True : Py_False);
    Py_XDECREF(by_address);
    Py_DECREF(rates);
    return out;
none_or_fail:
    if (PyErr_Occurred())
        goto fail;
none:
    Py_XDECREF(by_address);
    Py_DECREF(rates);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(by_address);
    Py_DECREF(rates);
    return NULL;
}

/* (r[0] or 0.0): a float (exactly) or None, else -1 */
static inline int rate_part(PyObject *o, double *out) {
    if (o == Py_None) {
        *out = 0.0;
        return 0;
    }
    if (!PyFloat_CheckExact(o))
        return -1;
    double v = PyFloat_AS_DOUBLE(o);
    *out = v != 0.0 ? v : 0.0;
    return 0;
}

static PyObject *peer_names(PyObject *self, PyObject *args) {
    PyObject *rates, *owner, *self_name, *names;
    if (!PyArg_ParseTuple(args, "OOOO", &rates, &owner, &self_name, &names))
        return NULL;
    if (!PyDict_CheckExact(rates) || !PyDict_CheckExact(owner) || !(self_name == Py_None || PyUnicode_CheckExact(self_name))
        || !(names == Py_None || PyFrozenSet_CheckExact(names)))
        Py_RETURN_NONE;
    PyObject *out = PyDict_New(), *address, *r;
    if (out == NULL)
        return NULL;
    Py_ssize_t pos = 0;
    int ordered = 1;
    double top = INFINITY;
    while (PyDict_Next(rates, &pos, &address, &r)) {
        PyObject *name = PyDict_GetItemWithError(owner, address); /* borrowed */
        if (name == NULL) {
            if (PyErr_Occurred())
                goto fail;
            name = address;
        }
        if (!PyUnicode_CheckExact(name) || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 2)
            goto none;
        if (self_name != Py_None) {
            int same = PyObject_RichCompareBool(name, self_name, Py_EQ);
            if (same < 0)
                goto fail;
            if (same)
                continue;
        }
        if (names != Py_None) {
            int in = PySet_Contains(names, name);
            if (in < 0)
                goto fail;
            if (!in)
                continue;
        }
        int had = PyDict_Contains(out, name);
        if (had < 0)
            goto fail;
        if (had) /* (one peer at several addresses: merged by the caller) */
            goto none;
        double tx, rx;
        if (rate_part(PyTuple_GET_ITEM(r, 0), &tx) < 0 || rate_part(PyTuple_GET_ITEM(r, 1), &rx) < 0)
            goto none;
        if (PyDict_SetItem(out, name, r) < 0)
            goto fail;
        double total = tx + rx;
        if (total > top)
            ordered = 0;
        top = total;
    }
    PyObject *pair = Py_BuildValue("(OO)", out, ordered ? Py_True : Py_False);
    Py_DECREF(out);
    return pair;
none:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"peer_names", peer_names, METH_VARARGS, "A node's peer rates by the watched node they are (None: left to the twin)."},
    {"peer_like", peer_like, METH_VARARGS, "A \"peers\" field read as the layout of the one before (None: it is not)."},
    {"peer_rates", peer_rates, METH_VARARGS, "A node's peer rates against its reading before (None: left to the twin)."},
    {"put_frame", (PyCFunction)(void (*)(void))put_frame, METH_FASTCALL,
     "MeshWindow._add's common path: a prober's due frames aged out, its new frame's rows put in."},
    {"pool_entries", pool_entries, METH_VARARGS, "PairIndex._frame's pass over readings that lost no probe."},
    {"pool_readings", pool_readings, METH_VARARGS, "MeshWindow._add's pass over a frame's common readings."},
    {"mesh_check", mesh_check, METH_VARARGS, "Checks a mesh field's rows as mesh_rows reads them, their families too."},
    {"mesh_targets", mesh_targets, METH_VARARGS, "A mesh field's rows' peers numbered, and where each row starts."},
    {"pool_rows", pool_rows, METH_VARARGS, "MeshWindow's pass over a frame's common rows, as they are packed."},
    {"mesh_rows", mesh_rows, METH_VARARGS, "The readings of a mesh field's rows (None: an address not in texts)."},
    {"peak_sum", peak_sum, METH_VARARGS, "The largest a + b of one row over a ring's newest rows of floats."},
    {"frame_fields", frame_fields, METH_VARARGS, "The {key: value} fields of a remote sampler frame's payload."},
    {"usual_frame", (PyCFunction)(void (*)(void))usual_frame, METH_FASTCALL,
     "A steady node's usual frame in one pass, or None (FrameDecoder's careful path reads it)."},
    {"positive", positive, METH_O, "Indexes of the values above 0 (NaN is not)."},
    {"iface_totals", iface_totals, METH_VARARGS, "A node's interface totals from its rates table."},
    {"column_stats", column_stats, METH_O, "(sum, max, index of the first max) of doubles."},
    {"rate_codes", rate_codes, METH_VARARGS, "RateRing codes (an array of 'H') of some columns of rows of doubles."},
    {"rate_row", (PyCFunction)(void (*)(void))rate_row, METH_FASTCALL,
     "rate_codes written into a buffer of 'H' from an item on (a history table's row)."},
    {"float_row", (PyCFunction)(void (*)(void))float_row, METH_FASTCALL,
     "Numbers (None: NaN) written as float32 into a buffer of 'f' from an item on."},
    {"columns", columns, METH_VARARGS, "The first ncols columns of rows of u64, then their row sums."},
    {"parse_rows", (PyCFunction)(void (*)(void))parse_rows, METH_VARARGS | METH_KEYWORDS,
     "Rows of u64 numbers, optionally labelled."},
    {"deltas", deltas, METH_VARARGS, "Per-element counter increase times a scale (NaN: went backwards)."},
    {"share", share, METH_VARARGS, "Per-element d(part)/d(whole) times a scale (NaN: unknown)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "netui._speedups", NULL, -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    init_tables();
    PyObject *array_module = PyImport_ImportModule("array");
    if (array_module == NULL)
        return NULL;
    array_type = PyObject_GetAttrString(array_module, "array");
    Py_DECREF(array_module);
    if (array_type == NULL)
        return NULL;
    one_double = PyObject_CallFunction(array_type, "s(d)", "d", 0.0);
    one_code = one_double == NULL ? NULL : PyObject_CallFunction(array_type, "s(i)", "H", 0);
    one_int = one_code == NULL ? NULL : PyObject_CallFunction(array_type, "s(i)", "i", 0);
    one_u32 = one_int == NULL ? NULL : PyObject_CallFunction(array_type, "s(i)", "I", 0);
    str_popleft = PyUnicode_InternFromString("popleft");
    str_append = PyUnicode_InternFromString("append");
    str_frombytes = PyUnicode_InternFromString("frombytes");
    if (one_u32 == NULL || str_popleft == NULL || str_append == NULL || str_frombytes == NULL) {
        Py_CLEAR(one_int);
        Py_CLEAR(one_code);
        Py_CLEAR(one_double);
        Py_CLEAR(array_type);
        return NULL;
    }
    return PyModule_Create(&module);
}
