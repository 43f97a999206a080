"""The CAN stream conventions (docs/SPEC.md, "CAN conventions").

Raw bus stream, one per bus — one fixed-size record per frame so batches stay
seekable and transposable:

    bits  0..31   t        uint32, explicit time axis: ticks since the DATA frame's axis_base
    bits 32..60   id       uint29, the identifier (11-bit ids are stored as is)
    bits 64..71   flags    uint8, FLAG_* below; each also readable as a bool field
    bits 72..79   dlc      uint8, the DLC code as on the wire (FD: 9..15 mean 12..64 bytes)
    bits 80..     data     fixed bytes: 8 (classic) or 64 (CAN FD), zero-padded

Per-message stream, one per DBC message: `t` as above, then the payload bytes
at bit 32, then `missing` (uint8: how many of those bytes the frame lacked, 0 for
a whole message), and one field per signal at bit 32 + its position in the
payload (the payload starts on a byte boundary, so both byte orders shift alike).

Routing (SPEC §13.4): the raw bus stream's schema meta `logb.can.routing` says
whether every frame is in it (`mirror`, host writers) or only the frames its
exact per-message streams cannot reconstruct (`exclusive`, the device default);
logb.can.bus.bus_frames gives the whole bus either way.
"""

import numpy as np

from ..errors import EncodeError
from ..schema import Field, Schema
from ..tables import AxisKind, AxisMode, DataType

FLAG_EXTENDED = 1 << 0
FLAG_REMOTE = 1 << 1
FLAG_ERROR = 1 << 2
FLAG_FD = 1 << 3
FLAG_BRS = 1 << 4
FLAG_ESI = 1 << 5
FLAG_TX = 1 << 6  # direction: transmitted by the logger, not received

FLAG_NAMES = ("extended", "remote", "error", "fd", "brs", "esi", "tx")

T_BIT, ID_BIT, FLAGS_BIT, DLC_BIT, DATA_BIT = 0, 32, 64, 72, 80
PAYLOAD_BIT = 32  # per-message streams: payload right after the timestamp
MISSING = "missing"  # per-message streams: payload bytes past the frame's data length (after the payload)
CLASSIC_PAYLOAD, FD_PAYLOAD = 8, 64

# DLC code -> payload bytes (ISO 11898-1; codes 9..15 only carry more than 8 in CAN FD).
# The one copy: host CAN code imports it, firmware/logb/_wire.py is generated from it.
DLC_LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)


def dlc_to_len(dlc, fd=True):
    """Payload bytes a DLC code announces (classic CAN caps codes 9..15 at 8)."""
    dlc = min(int(dlc), 15)
    return DLC_LENGTHS[dlc] if fd else min(dlc, 8)


def len_to_dlc(length):
    """The smallest DLC code whose payload holds `length` bytes (15 past 64)."""
    for code, n in enumerate(DLC_LENGTHS):
        if length <= n:
            return code
    return 15


def refusal(ident, flags, code, length, width=FD_PAYLOAD):
    """Why no raw bus record of `width` payload bytes holds the frame (id, flags, DLC code,
    data length in bytes) as given (SPEC §13.1), or None when one does: an id outside 11
    bits (29 extended or error), a DLC code above 15, a remote frame with data, a data frame
    whose length is not the one its DLC gives (FD table with FLAG_FD, at most 8 without;
    classic codes 9..15 mean 8 bytes), a payload wider than the record. The one rule for
    every trace reader and python-can writer (import, can.Logger, logb record): such a
    frame is counted in `logb.lost.invalid`, never written altered."""
    extended = flags & (FLAG_EXTENDED | FLAG_ERROR)
    if not 0 <= ident <= (0x1FFFFFFF if extended else 0x7FF):
        return f"an id over {29 if extended else 11} bits on a{'n extended' if extended else ' standard'} frame"
    if not 0 <= code <= 15:
        return f"DLC code {code} (above 15)"
    if length > width:
        return f"{length} data bytes, wider than the {width}-byte record"
    if flags & FLAG_REMOTE:
        return f"a remote frame with {length} data bytes" if length else None
    if flags & FLAG_ERROR:  # kept as the interface reported it
        return None
    if not flags & FLAG_FD and length == 8 and code >= 8:
        return None  # classic DLC 9..15 carries 8 bytes
    if length > 8 and not flags & FLAG_FD:
        return f"{length} data bytes on a classic (not FD) frame"
    if dlc_to_len(code, fd=bool(flags & FLAG_FD)) != length:
        return f"{length} data bytes under DLC code {code}"
    return None


_DLC_TABLE = np.array(DLC_LENGTHS, np.int64)


def payload_len_of(schema):
    """A per-message stream's message length in bytes: its `data` field's width."""
    return schema.field_named("data").bit_width // 8


def frame_lengths(dlc, flags):
    """The data bytes of frames from their DLC codes and flags (FLAG_*): the FD table for
    CAN FD frames, at most 8 for classic ones, none for remote frames."""
    flags = np.asarray(flags).astype(np.uint8)
    n = dlc_lengths(dlc, (flags & FLAG_FD) != 0)
    return np.where((flags & FLAG_REMOTE) != 0, 0, n)


def dlc_lengths(codes, fd=True):
    """dlc_to_len over an array of codes (int64); `fd` is one bool or one per code."""
    codes = np.minimum(np.asarray(codes, np.int64), 15)
    if np.ndim(fd) == 0:
        return _DLC_TABLE[codes] if fd else np.minimum(codes, 8)
    return np.where(fd, _DLC_TABLE[codes], np.minimum(codes, 8))


ROUTING_KEY = "logb.can.routing"  # raw bus stream schema meta: how frames were routed
SELECT_KEY = "logb.can.select"  # multiplexed branch schema meta: the device-side selector (dbc.parse_select)
MIRROR, EXCLUSIVE = "mirror", "exclusive"
ROUTINGS = (MIRROR, EXCLUSIVE)


def routing_of(schema):
    """The routing a raw bus stream's schema declares; `mirror` when the key is absent
    (what SPEC §13.4 said before the key existed)."""
    value = schema.meta_dict().get(ROUTING_KEY, MIRROR) if schema is not None else MIRROR
    return value if value in ROUTINGS else MIRROR


def routing_uuid(uuid, routing):
    """A raw bus stream's uuid for `routing`, from its `mirror` uuid (or back: the
    change is its own inverse): `exclusive` inverts the low bit of the last byte, so the
    two routings have distinct uuids, each with one byte-identical schema (SPEC §6.8),
    and a device can switch with the precomputed schema of its config (§13.7)."""
    uuid = bytes(uuid)
    if routing == MIRROR:
        return uuid
    if routing != EXCLUSIVE:
        raise EncodeError(f"routing must be {MIRROR!r} or {EXCLUSIVE!r}, not {routing!r}")
    return uuid[:15] + bytes([uuid[15] ^ 1])


def _time_axis(axis_exp):
    return dict(axis_kind=AxisKind.time, axis_mode=AxisMode.explicit, axis_exp=axis_exp,
                axis_unit="s", axis_step=0, axis_scale=1, axis_field=0)


def raw_bus_schema(uuid, name="can0", fd=False, axis_exp=-6, meta=(), routing=MIRROR):
    """Schema of a raw bus stream (classic: 18-byte records, FD: 74-byte). `uuid` is
    used as given (see routing_uuid); `routing` goes into the meta (SPEC §13.4)."""
    if routing not in ROUTINGS:
        raise EncodeError(f"routing must be {MIRROR!r} or {EXCLUSIVE!r}, not {routing!r}")
    payload = FD_PAYLOAD if fd else CLASSIC_PAYLOAD
    fields = [
        Field("t", T_BIT, 32, DataType.uint, description="ticks since the frame's axis_base"),
        Field("id", ID_BIT, 29, DataType.uint, description="CAN identifier"),
        Field("flags", FLAGS_BIT, 8, DataType.uint, description="bit0 extended, 1 remote, 2 error, "
              "3 FD, 4 BRS, 5 ESI, 6 tx"),
    ]
    fields += [Field(n, FLAGS_BIT + i, 1, DataType.bool) for i, n in enumerate(FLAG_NAMES)]
    fields += [
        Field("dlc", DLC_BIT, 8, DataType.uint, description="DLC code as on the wire"),
        Field("data", DATA_BIT, 8 * payload, DataType.bytes, description="payload, zero-padded"),
    ]
    return Schema(uuid=uuid, name=name, record_bits=DATA_BIT + 8 * payload, fields=tuple(fields),
                  meta=(("logb.can.layout", "raw-fd" if fd else "raw"), (ROUTING_KEY, routing)) + tuple(meta),
                  **_time_axis(axis_exp))


def message_schema(uuid, name, payload_len, signal_fields=(), axis_exp=-6, meta=()):
    """Schema of a per-message stream; signal fields must already be offset by PAYLOAD_BIT.
    `missing` follows the payload: a writer that leaves it zero claims whole messages."""
    end = PAYLOAD_BIT + 8 * payload_len
    fields = (
        Field("t", T_BIT, 32, DataType.uint, description="ticks since the frame's axis_base"),
        Field("data", PAYLOAD_BIT, 8 * payload_len, DataType.bytes, description="payload"),
        Field(MISSING, end, 8, DataType.uint, description="payload bytes past the frame's data length"),
    ) + tuple(signal_fields)
    return Schema(uuid=uuid, name=name, record_bits=end + 8, fields=fields,
                  meta=(("logb.can.layout", "message"),) + tuple(meta), **_time_axis(axis_exp))
