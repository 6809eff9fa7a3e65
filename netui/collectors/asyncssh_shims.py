"""Three changes to asyncssh's private internals that make a large fleet cheaper to watch.

Each one replaces a private method or attribute of asyncssh as netui knows it (the minor
versions pyproject.toml pins, ``TESTED_ASYNCSSH``). Before touching anything, a shim checks
that asyncssh still has the shape it was written for: the names it replaces exist and the
code around them still calls what the shim relies on. If not, it leaves asyncssh as it is —
netui works the same, only without that saving — and records why. ``shim_states()`` says,
for each shim, whether it applied and why not (``netui --version`` prints it).

- ``keepalive``: one keepalive timer per interval instead of one per read (lazy_keepalive).
- ``aes-gcm-keys``: one AES key schedule per cipher of a connection instead of one per
  packet (keep_gcm_keys).
- ``packet-log``: a packet is described for the log only when packet logging is on
  (quiet_packet_log).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

TESTED_ASYNCSSH = ((2, 24),)  # the (major, minor) versions the shims are tested with; pyproject pins them


@dataclass(frozen=True)
class ShimState:
    """Whether one shim is in effect in this process; ``reason`` says why not, in a few words."""

    name: str
    applied: bool
    reason: str = ""


KEEPALIVE, GCM, PACKET_LOG = "keepalive", "aes-gcm-keys", "packet-log"
SHIMS = (KEEPALIVE, GCM, PACKET_LOG)
_states: dict[str, ShimState] = {}


def _record(name: str, reason: str = "") -> bool:
    _states[name] = ShimState(name, not reason, reason)
    return not reason


def _names(func: object) -> set[str]:
    """The global and attribute names a function's code uses (its ``co_names``)."""
    code = getattr(func, "__code__", None)
    return set(code.co_names) if code is not None else set()


def _misfit(what: str, func: object, needs: tuple[str, ...]) -> str:
    """Why ``func`` is not the code a shim was written for ("" when it is)."""
    if func is None:
        return f"asyncssh has no {what}"
    missing = [n for n in needs if n not in _names(func)]
    return f"{what} no longer uses {', '.join(missing)}" if missing else ""


def asyncssh_version() -> str | None:
    try:
        from asyncssh.version import __version__
    except ImportError:
        return None
    return str(__version__)


def version_is_tested(version: str) -> bool:
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) in TESTED_ASYNCSSH
    except (ValueError, IndexError):
        return False


# keepalive -----------------------------------------------------------------------------------
_KEEPALIVE_METHODS = ("_reset_keepalive_timer", "_set_keepalive_timer", "_cancel_keepalive_timer",
                      "_keepalive_timer_callback")


def _keepalive_misfit() -> str:
    """Why SSHConnection is not the class lazy_keepalive was written for ("" when it is)."""
    try:
        from asyncssh.connection import SSHConnection
    except ImportError as exc:
        return f"cannot import asyncssh.connection ({exc})"
    missing = [m for m in _KEEPALIVE_METHODS if not callable(getattr(SSHConnection, m, None))]
    if missing:
        return f"asyncssh has no {', '.join(missing)}"
    return (_misfit("SSHConnection.__init__", SSHConnection.__init__,
                    ("_loop", "_keepalive_interval", "_keepalive_timer"))
            or _misfit("SSHConnection._recv_data", getattr(SSHConnection, "_recv_data", None),
                       ("_reset_keepalive_timer",))
            or _misfit("SSHConnection._set_keepalive_timer", SSHConnection._set_keepalive_timer,
                       ("_keepalive_timer", "_keepalive_timer_callback", "call_later")))


@functools.cache
def _keepalive_fits() -> bool:
    return _record(KEEPALIVE, _keepalive_misfit())


def lazy_keepalive(conn) -> bool:
    """Make the connection's keepalive timer lazy; True when it was.

    asyncssh restarts its keepalive timer on every read from the socket: a cancelled
    TimerHandle and a new one pushed on the loop's heap per frame, ~15 % of the CPU a frame
    costs the monitor (bench_fleet's floor). Here a read only notes the time; the timer,
    when it fires, re-arms itself for the rest of the interval if anything arrived since,
    and otherwise runs asyncssh's own check (keepalive request, count, "not responding"
    after keepalive_count_max). The same deadlines, one timer per interval instead of one
    per frame. An asyncssh whose internals differ keeps its own timer (False, recorded).
    A connection without keepalive has no timer to change (False).
    """
    if not _keepalive_fits():
        return False
    missing = [n for n in ("_loop", "_keepalive_interval", "_keepalive_timer") if not hasattr(conn, n)]
    if missing:
        return _record(KEEPALIVE, f"the connection has no {', '.join(missing)}")
    if not conn._keepalive_interval:
        return False
    loop = conn._loop
    interval = conn._keepalive_interval
    check = conn._keepalive_timer_callback  # asyncssh's: count, request, or give up
    last = [loop.time()]

    def received() -> None:
        last[0] = loop.time()

    def due() -> None:
        idle = loop.time() - last[0]
        if idle < interval:
            conn._keepalive_timer = loop.call_later(interval - idle, due)
        else:
            check()

    conn._cancel_keepalive_timer()
    conn._reset_keepalive_timer = received
    conn._keepalive_timer_callback = due  # what _set_keepalive_timer arms
    conn._set_keepalive_timer()
    return True


# AES-GCM -------------------------------------------------------------------------------------
def _gcm_misfit(cipher) -> str:
    gcm = getattr(cipher, "GCMCipher", None)
    if gcm is None:
        return "asyncssh has no GCMCipher"
    if getattr(cipher, "_GCM_MAC_SIZE", None) != 16:
        return "asyncssh's GCM tag is not 16 bytes"
    return (_misfit("GCMCipher._update_iv", getattr(gcm, "_update_iv", None), ("_iv",))
            or _misfit("GCMCipher.encrypt_and_sign", getattr(gcm, "encrypt_and_sign", None),
                       ("AESGCM", "_key", "_iv", "encrypt", "_update_iv"))
            or _misfit("GCMCipher.verify_and_decrypt", getattr(gcm, "verify_and_decrypt", None),
                       ("AESGCM", "_key", "_iv", "decrypt", "_update_iv", "InvalidTag")))


def keep_gcm_keys() -> bool:
    """Give each AES-GCM cipher of a connection its own key schedule; True when applied.

    asyncssh builds a new ``AESGCM(key)`` (a fresh AES key schedule) for every packet it
    encrypts or decrypts: of a 10 KB frame's ~13 µs decrypt here, ~6 µs. An AESGCM holds no
    state between calls (the nonce is an argument), so each ``GCMCipher`` — one per
    direction and key of a connection — makes its own on its first packet and uses it for
    every packet after.
    It lives exactly as long as that cipher: a re-key or a closed connection drops it with
    the key, nothing process-wide keeps keys. Same calls, same bytes on the wire
    (asyncssh's nonce update, tag split and InvalidTag handling, unchanged). An asyncssh
    whose GCMCipher differs keeps its own (False, recorded).
    """
    if GCM in _states and _states[GCM].applied:
        return True
    try:
        from asyncssh.crypto import cipher
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:
        return _record(GCM, f"cannot import ({exc})")
    why = _gcm_misfit(cipher)
    if why:
        return _record(GCM, why)
    gcm = cipher.GCMCipher

    # Each cipher makes its AESGCM on its first packet (a cipher made before the shim applied
    # too): the key never changes for a GCMCipher, a re-key makes a new one.
    def encrypt_and_sign(self, header: bytes, data: bytes) -> tuple[bytes, bytes]:
        try:
            aead = self._netui_aesgcm
        except AttributeError:
            aead = self._netui_aesgcm = AESGCM(self._key)
        data = aead.encrypt(self._iv, data, header)
        self._update_iv()
        return header + data[:-16], data[-16:]

    def verify_and_decrypt(self, header: bytes, data: bytes, mac: bytes) -> bytes | None:
        try:
            aead = self._netui_aesgcm
        except AttributeError:
            aead = self._netui_aesgcm = AESGCM(self._key)
        try:
            decrypted = aead.decrypt(self._iv, data + mac, header)
        except InvalidTag:
            decrypted = None
        self._update_iv()
        return decrypted

    gcm.encrypt_and_sign = encrypt_and_sign
    gcm.verify_and_decrypt = verify_and_decrypt
    return _record(GCM)


# packet log ----------------------------------------------------------------------------------
def quiet_packet_log() -> bool:
    """Skip asyncssh's per-packet log line unless its packet logging is on; True when applied.

    asyncssh formats a description of every packet (name, size, note: ~1.5 µs) and only
    then asks its logger, which drops it below debug level 3. The same check, made first.
    """
    if PACKET_LOG in _states and _states[PACKET_LOG].applied:
        return True
    try:
        from asyncssh.logging import SSHLogger
        from asyncssh.packet import SSHPacketLogger
    except ImportError as exc:
        return _record(PACKET_LOG, f"cannot import ({exc})")
    log = SSHPacketLogger.__dict__.get("_log_packet")
    if not isinstance(getattr(SSHLogger, "_debug_level", None), int):
        return _record(PACKET_LOG, "asyncssh's logger has no _debug_level")
    why = (_misfit("SSHPacketLogger._log_packet", log, ("logger", "packet"))
           or _misfit("SSHLogger.packet", getattr(SSHLogger, "packet", None), ("_debug_level",)))
    if why:
        return _record(PACKET_LOG, why)

    def _log_packet(self, msg, pkttype, pktid, packet, note):
        if self.logger._debug_level >= 3:  # what SSHLogger.packet() checks before logging
            log(self, msg, pkttype, pktid, packet, note)

    SSHPacketLogger._log_packet = _log_packet
    return _record(PACKET_LOG)


# all -----------------------------------------------------------------------------------------
def apply_shims(*, gcm: bool = True, packet_log: bool = True) -> dict[str, ShimState]:
    """Apply the process-wide shims (and check the keepalive one's fit); never raises."""
    for wanted, apply, name in ((gcm, keep_gcm_keys, GCM), (packet_log, quiet_packet_log, PACKET_LOG)):
        if wanted:
            try:
                apply()
            except Exception as exc:  # an asyncssh we do not know: without the shim, not without netui
                _record(name, f"failed: {type(exc).__name__}: {exc}")
    try:
        _keepalive_fits()
    except Exception as exc:
        _record(KEEPALIVE, f"failed: {type(exc).__name__}: {exc}")
    return shim_states()


def shim_states() -> dict[str, ShimState]:
    """Each shim's state in this process so far (a shim not tried yet is absent)."""
    return {name: _states[name] for name in SHIMS if name in _states}


def describe() -> list[str]:
    """asyncssh's version and each shim's state, one line each (``netui --version``)."""
    version = asyncssh_version()
    if version is None:
        return ["asyncssh: not installed (netui needs it for SSH nodes)"]
    tested = ", ".join(f"{a}.{b}" for a, b in TESTED_ASYNCSSH)
    lines = [f"asyncssh {version}" + ("" if version_is_tested(version) else f" (untested: netui is tested with {tested})")]
    states = apply_shims()
    for name in SHIMS:
        state = states.get(name)
        if state is None:
            continue
        lines.append(f"  shim {name}: " + ("applied" if state.applied else f"not applied ({state.reason})"))
    return lines
