"""Transport-protocol reassembly: J1939 TP (BAM, RTS/CTS) and ISO-TP (ISO 15765-2).

A streaming reassembler over frames in time order, (time, id, flags, data) one at a
time: `Reassembler.feed`, or `reassemble` over the columns of a bus. It never joins
what it did not see: every message says how it ended (`status`) and why (`detail`),
every timing rule that was broken is a note on it, and frames that belong to no
transfer are listed as `Stray`. Nothing is dropped, nothing is enforced silently.

J1939-21 (TP.CM PGN 0xEC00, TP.DT PGN 0xEB00): RTS/CTS sessions are keyed by
(originator, responder) and BAM sessions by the originator, so transfers between
other pairs, or BAMs of other sources, interleave freely. Sequence numbers are
checked against the announced packet count (and, for RTS/CTS, the window the last
CTS opened; a CTS asking for packets again is a retransmission, not a fault).
T1..T4 and Tr are measured and reported, not enforced.

ISO-TP: single (SF), first (FF), consecutive (CF) and flow-control (FC) frames on
the ids of request/response pairs; the FC of a transfer on one id of a pair comes
on the other. CAN FD escapes (SF_DL in the second byte when the first nibble is 0,
FF_DL 0 followed by a 32-bit length), SN wrap 15 → 0, and extended addressing
(the first data byte is the target address) are understood. UDS / OBD service ids
of the payloads are named (`service_name`).
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from . import layout

COMPLETE, INCOMPLETE, ABORTED, OUT_OF_ORDER, CONFLICT = "complete", "incomplete", "aborted", "out-of-order", \
    "conflict"
STATUSES = (COMPLETE, INCOMPLETE, ABORTED, OUT_OF_ORDER, CONFLICT)

EXTENDED = 1 << 31  # as in decode.frame_keys: bit 31 set for 29-bit ids
ID_BITS = 0x1FFFFFFF

# ---------------------------------------------------------------- J1939-21

PGN_TP_CM, PGN_TP_DT = 0xEC00, 0xEB00
CM_RTS, CM_CTS, CM_EOMA, CM_BAM, CM_ABORT = 16, 17, 19, 32, 255
GLOBAL = 0xFF  # destination address of a broadcast (BAM)
MAX_SIZE = 1785  # 255 packets of 7 bytes
# Seconds (J1939-21 §5.10.2.4): T1 a receiver waits for the next TP.DT, T2 for the first
# after its CTS, T3 an originator for a CTS or EndOfMsgAck after its last TP.DT (or its
# RTS), T4 for the next CTS after a CTS(0) "hold"; BAM packets go 50..200 ms apart.
J1939_TIMING = {"T1": 0.75, "T2": 1.25, "T3": 1.25, "T4": 1.05, "bam_min": 0.05, "bam_max": 0.2}

ABORT_REASONS = {
    1: "already in one or more connection-managed sessions",
    2: "system resources were needed for another task",
    3: "a timeout occurred",
    4: "CTS received while a data transfer was in progress",
    5: "maximum retransmit request limit reached",
    6: "unexpected data transfer packet",
    7: "bad sequence number",
    8: "duplicate sequence number",
    9: "total message size > 1785 bytes",
}


def j1939_id(priority, pgn, source, destination):
    """The 29-bit id a one-frame J1939 message of this PGN would have (what the DBC
    matches): the destination goes in PS for PDU1 PGNs (PF < 240)."""
    ps = destination if (pgn >> 8) & 0xFF < 240 else pgn & 0xFF
    return ((priority & 7) << 26) | ((pgn & 0x3FF00) << 8) | (ps << 8) | (source & 0xFF)


# ---------------------------------------------------------------- ISO-TP

# Seconds (ISO 15765-2 table 16): N_Bs a sender waits for an FC, N_Cr a receiver for the next CF.
ISOTP_TIMING = {"N_Bs": 1.0, "N_Cr": 1.0}
FC_CTS, FC_WAIT, FC_OVERFLOW = 0, 1, 2


@dataclass(frozen=True)
class IsoTpPair:
    """Request and response ids (keys: bit 31 set for 29-bit ids). A transfer on one
    has its flow control on the other; `response` None for a functional request id
    (single frames only, e.g. OBD's 0x7DF)."""

    request: int
    response: object = None
    extended_addressing: bool = False  # the first data byte is the target address (N_TA)


def parse_id(text):
    """'0x7E0' → key; ids over 0x7FF, or written with 8 hex digits, are 29-bit."""
    t = text.strip()
    try:
        v = int(t, 16) if t.lower().startswith("0x") or not t.isdigit() else int(t)
    except ValueError:
        raise UsageError(f"{text!r} is no CAN id (write it in hex, e.g. 0x7E0 or 0x18DA10F1)") from None
    if not 0 <= v <= ID_BITS:
        raise UsageError(f"{text!r} is no CAN id: ids are 11 or 29 bits")
    digits = t[2:] if t.lower().startswith("0x") else t
    return v | EXTENDED if v > 0x7FF or len(digits) == 8 else v


def parse_pair(text, extended_addressing=False):
    """'REQ:RESP' (e.g. '0x7E0:0x7E8') → IsoTpPair."""
    req, sep, resp = text.partition(":")
    if not sep or not req or not resp:
        raise UsageError(f"--isotp {text!r}: give a request and a response id, REQ:RESP (e.g. 0x7E0:0x7E8)")
    a, b = parse_id(req), parse_id(resp)
    if a == b:
        raise UsageError(f"--isotp {text!r}: request and response ids must differ")
    return IsoTpPair(a, b, extended_addressing)


# OBD-II / UDS on 11-bit ids (ISO 15765-4): physical requests 0x7E0..0x7E7 answered on +8,
# the functional request 0x7DF. 29-bit normal fixed addressing (0x18DA<TA><SA>) is
# recognised by its PF 0xDA whatever the pairs (see Reassembler).
OBD_PAIRS = tuple(IsoTpPair(0x7E0 + i, 0x7E8 + i) for i in range(8)) + (IsoTpPair(0x7DF),)
PF_PHYSICAL, PF_FUNCTIONAL = 0xDA, 0xDB

UDS_SERVICES = {
    0x10: "DiagnosticSessionControl", 0x11: "ECUReset", 0x14: "ClearDiagnosticInformation",
    0x19: "ReadDTCInformation", 0x22: "ReadDataByIdentifier", 0x23: "ReadMemoryByAddress",
    0x24: "ReadScalingDataByIdentifier", 0x27: "SecurityAccess", 0x28: "CommunicationControl",
    0x29: "Authentication", 0x2A: "ReadDataByPeriodicIdentifier", 0x2C: "DynamicallyDefineDataIdentifier",
    0x2E: "WriteDataByIdentifier", 0x2F: "InputOutputControlByIdentifier", 0x31: "RoutineControl",
    0x34: "RequestDownload", 0x35: "RequestUpload", 0x36: "TransferData", 0x37: "RequestTransferExit",
    0x38: "RequestFileTransfer", 0x3D: "WriteMemoryByAddress", 0x3E: "TesterPresent",
    0x83: "AccessTimingParameter", 0x84: "SecuredDataTransmission", 0x85: "ControlDTCSetting",
    0x86: "ResponseOnEvent", 0x87: "LinkControl",
}
OBD_SERVICES = {
    0x01: "OBD ShowCurrentData", 0x02: "OBD ShowFreezeFrameData", 0x03: "OBD ShowStoredDTCs",
    0x04: "OBD ClearDTCs", 0x05: "OBD OxygenSensorMonitoring", 0x06: "OBD OnBoardMonitoring",
    0x07: "OBD ShowPendingDTCs", 0x08: "OBD ControlOnBoardSystem", 0x09: "OBD VehicleInformation",
    0x0A: "OBD ShowPermanentDTCs",
}
NEGATIVE_RESPONSE = 0x7F
NRC_NAMES = {
    0x10: "generalReject", 0x11: "serviceNotSupported", 0x12: "subFunctionNotSupported",
    0x13: "incorrectMessageLengthOrInvalidFormat", 0x14: "responseTooLong", 0x21: "busyRepeatRequest",
    0x22: "conditionsNotCorrect", 0x24: "requestSequenceError", 0x25: "noResponseFromSubnetComponent",
    0x26: "failurePreventsExecutionOfRequestedAction", 0x31: "requestOutOfRange", 0x33: "securityAccessDenied",
    0x34: "authenticationRequired", 0x35: "invalidKey", 0x36: "exceededNumberOfAttempts",
    0x37: "requiredTimeDelayNotExpired", 0x70: "uploadDownloadNotAccepted", 0x71: "transferDataSuspended",
    0x72: "generalProgrammingFailure", 0x73: "wrongBlockSequenceCounter",
    0x78: "requestCorrectlyReceived-ResponsePending", 0x7E: "subFunctionNotSupportedInActiveSession",
    0x7F: "serviceNotSupportedInActiveSession", 0x81: "rpmTooHigh", 0x82: "rpmTooLow", 0x83: "engineIsRunning",
    0x84: "engineIsNotRunning", 0x85: "engineRunTimeTooLow", 0x86: "temperatureTooHigh",
    0x87: "temperatureTooLow", 0x88: "vehicleSpeedTooHigh", 0x89: "vehicleSpeedTooLow",
    0x8A: "throttle/PedalTooHigh", 0x8B: "throttle/PedalTooLow", 0x8C: "transmissionRangeNotInNeutral",
    0x8D: "transmissionRangeNotInGear", 0x8F: "brakeSwitch(es)NotClosed", 0x90: "shifterLeverNotInPark",
    0x91: "torqueConverterClutchLocked", 0x92: "voltageTooHigh", 0x93: "voltageTooLow",
}


def _sid_name(sid):
    return UDS_SERVICES.get(sid) or OBD_SERVICES.get(sid)


def service_name(payload):
    """The UDS / OBD service a payload's first byte names: 'ReadDataByIdentifier' for a
    request, 'ReadDataByIdentifier+' for its positive response (SID + 0x40),
    'ReadDataByIdentifier- requestOutOfRange' for a negative response (0x7F SID NRC);
    '' when the byte names none."""
    if not payload:
        return ""
    sid = payload[0]
    if sid == NEGATIVE_RESPONSE:
        if len(payload) < 3:
            return "NegativeResponse (short)"
        rejected = _sid_name(payload[1]) or f"0x{payload[1]:02X}"
        return f"{rejected}- {NRC_NAMES.get(payload[2], f'NRC 0x{payload[2]:02X}')}"
    if _sid_name(sid):
        return _sid_name(sid)
    if sid >= 0x40 and _sid_name(sid - 0x40):
        return _sid_name(sid - 0x40) + "+"
    return ""


# ---------------------------------------------------------------- results

@dataclass
class Message:
    """One reassembled (or attempted) transport message. Times are ticks of the input's axis."""

    protocol: str  # "j1939" | "isotp"
    kind: str  # "BAM" | "RTS/CTS" | "single" | "multi"
    start: int  # the first frame's ticks (TP.CM, SF or FF)
    end: int  # the last frame's ticks that belongs to it
    can_id: int  # key (bit 31: 29-bit); J1939: the id the PGN would have in one frame; ISO-TP: the data's id
    source: int  # J1939 source address; ISO-TP: the id the data came on (key)
    destination: int  # J1939 destination address (0xFF: global); ISO-TP: the partner id (key), -1 without
    size: int  # the length the first frame announced
    payload: bytes  # the bytes received in order (up to the first gap), at most `size`
    status: str = COMPLETE
    detail: str = ""  # why it is not complete
    pgn: object = None  # J1939
    address: object = None  # ISO-TP extended addressing: the target address byte
    notes: list = field(default_factory=list)  # timing and protocol deviations that did not stop it
    rows: list = field(default_factory=list)  # input row of every frame it was built from
    session: int = 0
    done_row: int = -1  # the input row of the frame that ended it (an EndOfMsgAck may follow)

    @property
    def complete(self):
        return self.status == COMPLETE

    @property
    def service(self):
        return service_name(self.payload) if self.protocol == "isotp" else ""


@dataclass
class Stray:
    """A transport frame that belongs to no transfer (a TP.DT without a session, a CF
    without an FF, an FC nobody waits for, an SF that does not parse)."""

    t: int
    protocol: str
    can_id: int
    what: str
    row: int = -1
    session: int = 0


@dataclass
class Result:
    messages: list  # Message, by start time
    strays: list  # Stray, by time
    axis_exp: int = -6

    def counts(self):
        """{status: messages} for every status, plus 'stray' frames and 'notes' (messages with one)."""
        out = {s: 0 for s in STATUSES}
        for m in self.messages:
            out[m.status] += 1
        out["stray"] = len(self.strays)
        out["notes"] = sum(1 for m in self.messages if m.notes)
        return out

    def seconds(self, ticks):
        return ticks * 10.0 ** self.axis_exp


# ---------------------------------------------------------------- the engine

@dataclass
class _J1939Session:
    msg: Message
    packets: int  # announced
    chunks: dict = field(default_factory=dict)  # sequence number -> 7 bytes
    expected: int = 1  # next sequence number in order
    window: tuple = (1, 0)  # RTS/CTS: the packets the last CTS asked for (empty before one)
    last: str = "CM"  # what came last: CM (BAM/RTS), CTS, HOLD (CTS of 0 packets), DT
    last_t: int = 0
    resend: set = field(default_factory=set)  # packets received before that a CTS asked for again
    late: list = field(default_factory=list)  # sequence numbers that came after a later one
    min_gap: float = None  # BAM: smallest interval between packets


@dataclass
class _IsoTpSession:
    msg: Message
    data: bytearray
    sn: int = 1  # next sequence number
    frames: int = 0  # CFs so far
    block: int = 0  # CFs since the last FC(CTS)
    bs: object = None  # block size of the last FC (None: no FC yet)
    stmin: float = 0.0
    last_t: int = 0
    waits: int = 0
    awaiting_fc: bool = True
    min_gap: float = None  # smallest interval between CFs


def _stmin_s(b):
    """ISO 15765-2 STmin byte → seconds (0..127 ms, 0xF1..0xF9 100..900 µs; reserved as 127 ms)."""
    if b <= 0x7F:
        return b / 1000.0
    if 0xF1 <= b <= 0xF9:
        return (b - 0xF0) / 10000.0
    return 0.127


def _hex_key(key):
    return f"0x{key & ID_BITS:08X}" if key & EXTENDED else f"0x{key:03X}"


def _missing_text(seqs, total):
    seqs = sorted(seqs)
    if len(seqs) == 1:
        return f"missing packet {seqs[0]} of {total}"
    runs, lo = [], seqs[0]
    for a, b in zip(seqs, seqs[1:] + [None]):
        if b != a + 1:
            runs.append(str(lo) if lo == a else f"{lo}..{a}")
            lo = b
    return f"missing packets {', '.join(runs)} of {total}"


class Reassembler:
    """Feed frames in time order (`feed`), then `close()` for the Result.

    j1939: reassemble J1939 TP; isotp: the IsoTpPairs to follow (None: none; 29-bit
    normal fixed addressing 0x18DA/0x18DB is followed whenever isotp is not None);
    tick_s: seconds per tick of the times fed."""

    def __init__(self, j1939=True, isotp=OBD_PAIRS, tick_s=1e-6):
        self.j1939 = j1939
        self.isotp = isotp is not None
        self.tick_s = tick_s
        self._hz = round(1 / tick_s) if tick_s < 1 else None
        self.partner = {}  # ISO-TP id key -> partner key or None (functional)
        self.ext_addr = set()  # ISO-TP id keys with extended addressing
        for p in isotp or ():
            self.partner[p.request] = p.response
            if p.response is not None:
                self.partner[p.response] = p.request
            if p.extended_addressing:
                self.ext_addr.update(k for k in (p.request, p.response) if k is not None)
        self.messages, self.strays = [], []
        self._bam, self._rts = {}, {}  # source -> session; (source, destination) -> session
        self._acked = {}  # (source, destination) -> the last completed RTS/CTS Message (its EndOfMsgAck)
        self._tp = {}  # (id key, address) -> _IsoTpSession
        self._dead = {}  # (id key, address) -> a Message whose transfer broke; its later CFs count on it
        self._last_t = None
        self._session = 0

    # ------------------------------------------------------------ input

    def follows(self, key):
        """Is a frame of this id key one the reassembler reads?"""
        if self.j1939 and key & EXTENDED and ((key >> 16) & 0x3FF) in (PGN_TP_CM >> 8, PGN_TP_DT >> 8):
            return True
        return self.isotp and (key in self.partner or self._fixed(key) is not False)

    def _fixed(self, key):
        """29-bit normal fixed addressing: partner key, None (functional), or False (not one)."""
        if not key & EXTENDED:
            return False
        pf = (key >> 16) & 0x3FF
        if pf == PF_PHYSICAL:
            ta, sa = (key >> 8) & 0xFF, key & 0xFF
            return (key & ~0xFFFF) | (sa << 8) | ta
        return None if pf == PF_FUNCTIONAL else False

    def feed(self, t, key, data, row=-1, session=0):
        """One data frame: ticks, id key (bit 31: 29-bit), its data bytes (the frame's length)."""
        if session != self._session or (self._last_t is not None and t < self._last_t):
            why = "the recording session ended" if session != self._session else "the recording's time went back"
            self._close_all(why)
            self._session = session
        self._last_t = t
        if self.j1939 and key & EXTENDED:
            pf = (key >> 16) & 0x3FF
            if pf == PGN_TP_CM >> 8:
                return self._cm(t, key, data, row)
            if pf == PGN_TP_DT >> 8:
                return self._dt(t, key, data, row)
        if self.isotp:
            if key in self.partner:
                return self._isotp(t, key, data, row, self.partner[key], key in self.ext_addr)
            partner = self._fixed(key)
            if partner is not False:
                return self._isotp(t, key, data, row, partner, False)
        return None

    def close(self):
        """Close what is still open (incomplete) and return the Result."""
        self._close_all("the recording ended")
        self.messages.sort(key=lambda m: (m.session, m.start))
        self.strays.sort(key=lambda s: (s.session, s.t))
        return self.messages, self.strays

    # ------------------------------------------------------------ helpers

    def _secs(self, a, b):
        # ticks / (ticks per second): exact for the limits (50 ms is 50000 µs, not 0.04999…)
        return (b - a) / self._hz if self._hz else (b - a) * self.tick_s

    def _stray(self, t, protocol, key, what, row):
        self.strays.append(Stray(t, protocol, key, what, row, self._session))

    def _emit(self, msg, status=COMPLETE, detail=""):
        msg.status, msg.detail, msg.done_row = status, detail, msg.rows[-1]
        self.messages.append(msg)
        return msg

    def _close_all(self, why):
        for s in list(self._bam.values()) + list(self._rts.values()):
            self._end_j1939(s, why)
        for s in list(self._tp.values()):
            self._end_isotp(s, INCOMPLETE, f"{len(s.data)} of {s.msg.size} bytes: {why}")
        for m in self._acked.values():
            _unacked(m)
        for m, n in self._dead.values():
            _not_joined(m, n)
        self._bam, self._rts, self._tp, self._dead, self._acked = {}, {}, {}, {}, {}

    # ------------------------------------------------------------ J1939

    def _cm(self, t, key, data, row):
        sa, da = key & 0xFF, (key >> 8) & 0xFF
        if len(data) < 8:
            return self._stray(t, "j1939", key, f"TP.CM of {len(data)} bytes (needs 8)", row)
        control, pgn = data[0], data[5] | (data[6] << 8) | (data[7] << 16)
        if control in (CM_BAM, CM_RTS):
            size, packets = data[1] | (data[2] << 8), data[3]
            bam = control == CM_BAM
            if bam and da != GLOBAL:
                return self._stray(t, "j1939", key, f"TP.CM_BAM to 0x{da:02X} (a BAM goes to 0xFF)", row)
            table, k = (self._bam, sa) if bam else (self._rts, (sa, da))
            old = table.pop(k, None)
            if old is not None:
                gap = self._secs(old.last_t, t)
                if gap > J1939_TIMING["T1"]:
                    self._end_j1939(old, f"no packet for {gap:.3f} s (T1 {J1939_TIMING['T1']} s)")
                else:
                    self._end_j1939(old, f"a new {'BAM' if bam else 'RTS'} from 0x{sa:02X} began", CONFLICT)
            if not bam and k in self._acked:
                _unacked(self._acked.pop(k))
            msg = Message("j1939", "BAM" if bam else "RTS/CTS", t, t, j1939_id((key >> 26) & 7, pgn, sa, da) |
                          EXTENDED, sa, da, size, b"", pgn=pgn, rows=[row], session=self._session)
            if not 9 <= size <= MAX_SIZE:
                msg.notes.append(f"size {size} outside 9..{MAX_SIZE}")
            if packets != -(-size // 7):
                msg.notes.append(f"{packets} packets announced for {size} bytes (needs {-(-size // 7)})")
            table[k] = _J1939Session(msg, packets, last_t=t)
            return None
        if control == CM_CTS:  # receiver (sa) to originator (da)
            s = self._rts.get((da, sa))
            if s is None:
                return self._stray(t, "j1939", key, f"TP.CM_CTS from 0x{sa:02X} to 0x{da:02X}: no RTS open", row)
            self._check_pgn(s, pgn, "CTS")
            s.msg.rows.append(row)
            s.msg.end = t
            gap = self._secs(s.last_t, t)
            limit = "T4" if s.last == "HOLD" else "T3"
            if s.last in ("CM", "DT", "HOLD") and gap > J1939_TIMING[limit]:
                s.msg.notes.append(f"{limit}: CTS {gap:.3f} s after the last frame (limit {J1939_TIMING[limit]} s)")
            count, nxt = data[1], data[2]
            if count == 0:
                s.last = "HOLD"
            else:
                if nxt < s.expected:  # a retransmission: the packets it repeats are no duplicates
                    s.msg.notes.append(f"retransmission of packets {nxt}..{nxt + count - 1} requested")
                    s.resend = {q for q in range(nxt, nxt + count) if q in s.chunks}
                    s.expected = nxt
                s.window = (nxt, nxt + count - 1)
                s.last = "CTS"
            s.last_t = t
            return None
        if control == CM_EOMA:  # receiver (sa) to originator (da)
            m = self._acked.get((da, sa))
            s = self._rts.get((da, sa))
            if s is not None:
                s.msg.rows.append(row)
                del self._rts[(da, sa)]
                return self._end_j1939(s, f"EndOfMsgAck from 0x{sa:02X} before every packet")
            if m is None or any("EndOfMsgAck" in n for n in m.notes):
                return self._stray(t, "j1939", key, f"TP.CM_EndOfMsgAck from 0x{sa:02X} to 0x{da:02X}: "
                                   "no transfer to acknowledge", row)
            gap = self._secs(m.end, t)
            m.rows.append(row)
            m.notes.append(f"EndOfMsgAck after {gap:.3f} s" + (f" (T3 {J1939_TIMING['T3']} s)" if
                                                                 gap > J1939_TIMING["T3"] else ""))
            if pgn != m.pgn:
                m.notes.append(f"EndOfMsgAck names PGN 0x{pgn:04X}")
            return None
        if control == CM_ABORT:
            for k in ((sa, da), (da, sa)):
                s = self._rts.get(k)
                if s is not None:
                    s.msg.rows.append(row)
                    s.msg.end = t
                    reason = ABORT_REASONS.get(data[1], f"reason {data[1]}")
                    del self._rts[k]
                    return self._emit_j1939(s, ABORTED, f"TP.Conn_Abort from 0x{sa:02X}: {reason}")
            return self._stray(t, "j1939", key, f"TP.Conn_Abort from 0x{sa:02X} to 0x{da:02X} (reason "
                               f"{data[1]}: {ABORT_REASONS.get(data[1], 'unknown')}): no RTS open", row)
        return self._stray(t, "j1939", key, f"TP.CM control byte {control} is none of RTS, CTS, "
                           "EndOfMsgAck, BAM, Abort", row)

    def _check_pgn(self, s, pgn, what):
        if pgn != s.msg.pgn:
            s.msg.notes.append(f"{what} names PGN 0x{pgn:04X}")

    def _dt(self, t, key, data, row):
        sa, da = key & 0xFF, (key >> 8) & 0xFF
        bam = da == GLOBAL
        s = self._bam.get(sa) if bam else self._rts.get((sa, da))
        if s is None:
            to = "" if bam else f" to 0x{da:02X}"
            return self._stray(t, "j1939", key, f"TP.DT from 0x{sa:02X}{to} (packet {data[0] if data else '?'}): "
                               f"no {'BAM' if bam else 'RTS/CTS session'} open", row)
        if len(data) < 2:
            return self._stray(t, "j1939", key, f"TP.DT of {len(data)} bytes", row)
        s.msg.rows.append(row)
        s.msg.end = t
        gap = self._secs(s.last_t, t)
        if bam:
            if s.last == "DT":
                s.min_gap = gap if s.min_gap is None else min(s.min_gap, gap)
            if gap > J1939_TIMING["T1"]:
                s.msg.notes.append(f"T1: packet {data[0]} {gap:.3f} s after the last frame (limit "
                                   f"{J1939_TIMING['T1']} s)")
        else:
            limit = "T2" if s.last == "CTS" else "T1"
            if s.last in ("CTS", "DT") and gap > J1939_TIMING[limit]:
                s.msg.notes.append(f"{limit}: packet {data[0]} {gap:.3f} s after the last frame (limit "
                                   f"{J1939_TIMING[limit]} s)")
        s.last, s.last_t = "DT", t
        seq, chunk = data[0], bytes(data[1:8])
        if not 1 <= seq <= s.packets:
            s.late.append(seq)
            s.msg.notes.append(f"packet {seq} outside 1..{s.packets}")
            return None
        if not bam:
            lo, hi = s.window
            if not lo <= seq <= hi:
                s.late.append(seq)
                s.msg.notes.append(f"packet {seq} outside the CTS window {lo}..{hi}" if hi >= lo else
                                   f"packet {seq} before any CTS")
        if seq in s.chunks:
            if seq in s.resend:
                s.resend.discard(seq)
            else:
                s.msg.notes.append(f"packet {seq} repeated" + ("" if s.chunks[seq] == chunk else " with other data"))
                if s.chunks[seq] != chunk:
                    s.late.append(seq)
                    chunk = s.chunks[seq]  # the first copy stays; the message is not complete anyway
        elif seq < s.expected:
            s.late.append(seq)  # a later packet came before it
        s.chunks[seq] = chunk
        s.expected = max(s.expected, seq + 1)
        # A BAM ends with its last packet; an RTS/CTS originator may still resend what was lost.
        if len(s.chunks) == s.packets or (bam and seq == s.packets):
            key_ = sa if bam else (sa, da)
            (self._bam if bam else self._rts).pop(key_, None)
            self._end_j1939(s, "")
        return None

    def _end_j1939(self, s, why, status=INCOMPLETE):
        """Close a J1939 session: complete if every packet came in order, else `status` (with `why`)."""
        missing = [q for q in range(1, s.packets + 1) if q not in s.chunks]
        if s.min_gap is not None and s.min_gap < J1939_TIMING["bam_min"]:
            s.msg.notes.append(f"BAM packets {s.min_gap * 1000:.1f} ms apart (J1939-21: 50..200 ms)")
        if status == INCOMPLETE and not missing and s.late:
            status, why = OUT_OF_ORDER, f"packet{'s' if len(set(s.late)) > 1 else ''} " \
                f"{', '.join(str(q) for q in sorted(set(s.late)))} out of sequence"
        elif status == INCOMPLETE and not missing and not why:
            status = COMPLETE
        elif missing:
            why = _missing_text(missing, s.packets) + (f": {why}" if why else "")
        return self._emit_j1939(s, status, why)

    def _emit_j1939(self, s, status, why):
        body = bytearray()
        for q in range(1, s.packets + 1):
            if q not in s.chunks:
                break
            body += s.chunks[q]
        s.msg.payload = bytes(body[:s.msg.size])
        if status == COMPLETE and len(s.msg.payload) < s.msg.size:
            status, why = INCOMPLETE, f"{s.packets} packets hold {len(s.msg.payload)} of {s.msg.size} bytes"
        m = self._emit(s.msg, status, why)
        if m.kind == "RTS/CTS" and status == COMPLETE:
            self._acked[(m.source, m.destination)] = m
        return m

    # ------------------------------------------------------------ ISO-TP

    def _isotp(self, t, key, data, row, partner, ext):
        address = None
        if ext:
            if not data:
                return self._stray(t, "isotp", key, "empty frame (no target address)", row)
            address, data = data[0], data[1:]
        if not data:
            return self._stray(t, "isotp", key, "empty frame (no N_PCI)", row)
        pci = data[0] >> 4
        chan = (key, address)
        if pci == 0:
            return self._sf(t, key, data, row, partner, address, chan)
        if pci == 1:
            return self._ff(t, key, data, row, partner, address, chan)
        if pci == 2:
            return self._cf(t, key, data, row, chan)
        if pci == 3:
            return self._fc(t, key, data, row, partner, address)
        return self._stray(t, "isotp", key, f"N_PCI type {pci} is none of SF, FF, CF, FC", row)

    def _interrupt(self, t, chan, what):
        """A new SF or FF on a channel ends the transfer under way there (ISO 15765-2 §9.8.3)."""
        if chan in self._dead:
            _not_joined(*self._dead.pop(chan))
        s = self._tp.pop(chan, None)
        if s is not None:
            s.msg.end = max(s.msg.end, s.last_t)
            self._end_isotp(s, CONFLICT, f"{len(s.data)} of {s.msg.size} bytes: a new {what} began")

    def _sf(self, t, key, data, row, partner, address, chan):
        n = data[0] & 0x0F
        off = 1
        if n == 0 and len(data) > 8:  # CAN FD escape: SF_DL in the next byte
            n, off = (data[1] if len(data) > 1 else 0), 2
        if n == 0 or n > len(data) - off:
            return self._stray(t, "isotp", key, f"single frame announcing {n} bytes in a {len(data)}-byte frame",
                               row)
        self._interrupt(t, chan, "single frame")
        payload = bytes(data[off:off + n])
        return self._emit(Message("isotp", "single", t, t, key, key, -1 if partner is None else partner, n, payload,
                                  address=address, rows=[row], session=self._session))

    def _ff(self, t, key, data, row, partner, address, chan):
        if len(data) < 2:
            return self._stray(t, "isotp", key, "first frame of fewer than 2 bytes", row)
        size, off = ((data[0] & 0x0F) << 8) | data[1], 2
        if size == 0:  # escape: 32-bit FF_DL
            if len(data) < 6:
                return self._stray(t, "isotp", key, "first frame with a 32-bit length cut short", row)
            size, off = int.from_bytes(bytes(data[2:6]), "big"), 6
        self._interrupt(t, chan, "first frame")
        msg = Message("isotp", "multi", t, t, key, key, -1 if partner is None else partner, size, b"",
                      address=address, rows=[row], session=self._session)
        if partner is None:
            msg.notes.append("first frame on a functional id (no flow control can answer)")
        if size <= len(data) - off:
            msg.notes.append(f"first frame for {size} bytes (a single frame holds them)")
        self._tp[chan] = _IsoTpSession(msg, bytearray(data[off:off + size]), last_t=t)
        if len(self._tp[chan].data) >= size:
            return self._end_isotp(self._tp.pop(chan), COMPLETE, "")
        return None

    def _cf(self, t, key, data, row, chan):
        s = self._tp.get(chan)
        if s is None:
            dead = self._dead.get(chan)
            if dead is not None:  # the rest of a broken transfer: counted on it, never joined
                dead[0].rows.append(row)
                dead[1] += 1
                return None
            return self._stray(t, "isotp", key, f"consecutive frame (SN {data[0] & 0x0F}) without a first frame",
                               row)
        sn = data[0] & 0x0F
        gap = self._secs(s.last_t, t)
        m = s.msg
        m.rows.append(row)
        m.end = t
        if (s.frames or s.bs is not None) and gap > ISOTP_TIMING["N_Cr"]:
            m.notes.append(f"N_Cr: CF {s.frames + 1} {gap:.3f} s after the last (limit {ISOTP_TIMING['N_Cr']} s)")
        if s.frames and s.block:
            s.min_gap = gap if s.min_gap is None else min(s.min_gap, gap)
        if s.awaiting_fc:
            m.notes.append(f"CF {s.frames + 1} before a flow control (CTS) allowed it")
            s.awaiting_fc = False  # one note per block
        s.last_t = t
        if sn != s.sn:  # a receiver stops here (ISO 15765-2 §9.6.4.4); so do we
            del self._tp[chan]
            ahead = (sn - s.sn) % 16
            if 1 <= ahead <= 7:
                n = s.frames + 1
                status, what = INCOMPLETE, f"missing consecutive frame {n}" if ahead == 1 else \
                    f"missing consecutive frames {n}..{n + ahead - 1}"
            else:
                status, what = OUT_OF_ORDER, f"CF {s.frames + 1} has SN {sn} where {s.sn} was due"
            self._end_isotp(s, status, f"{len(s.data)} of {m.size} bytes: {what}")
            self._dead[chan] = [m, 0]
            return None
        s.sn = (s.sn + 1) % 16
        s.frames += 1
        s.block += 1
        s.data += data[1:]
        if s.bs and s.block == s.bs and len(s.data) < m.size:
            s.awaiting_fc = True  # the block is full: the sender waits for the next FC
        if len(s.data) >= m.size:
            del self._tp[chan]
            return self._end_isotp(s, COMPLETE, "")
        return None

    def _fc(self, t, key, data, row, partner, address):
        # The FC answers the transfer on the partner id (with extended addressing, whichever of
        # its target addresses is waiting; the FC's own address byte names the sender).
        cands = [s for (k, _), s in self._tp.items() if k == partner]
        if not cands:
            return self._stray(t, "isotp", key, f"flow control (FS {data[0] & 0x0F}) with no transfer on "
                               f"{_hex_key(partner) if partner is not None else 'a partner id'}", row)
        s = next((c for c in cands if c.awaiting_fc), cands[-1])
        m, fs = s.msg, data[0] & 0x0F
        m.rows.append(row)
        m.end = t
        gap = self._secs(s.last_t, t)
        if gap > ISOTP_TIMING["N_Bs"]:
            m.notes.append(f"N_Bs: flow control {gap:.3f} s after the last frame (limit {ISOTP_TIMING['N_Bs']} s)")
        s.last_t = t
        if fs == FC_OVERFLOW:
            del self._tp[(m.source, m.address)]
            return self._end_isotp(s, ABORTED, f"{len(s.data)} of {m.size} bytes: the receiver's flow control "
                                   "said overflow (FS 2)")
        if fs == FC_WAIT:
            s.waits += 1
            return None
        if fs != FC_CTS:
            m.notes.append(f"flow control with reserved FS {fs}")
            return None
        if len(data) < 3:
            m.notes.append("flow control of fewer than 3 bytes")
            return None
        if not s.awaiting_fc and s.frames:
            m.notes.append(f"flow control (CTS) after CF {s.frames} while none was due")
        s.bs, s.stmin, s.block, s.awaiting_fc = data[1], _stmin_s(data[2]), 0, False
        return None

    def _end_isotp(self, s, status, why):
        m = s.msg
        if s.waits:
            m.notes.append(f"{s.waits} flow control wait{'s' if s.waits > 1 else ''} (FS 1)")
        if s.min_gap is not None and s.min_gap < s.stmin:
            m.notes.append(f"CFs {s.min_gap * 1000:.1f} ms apart where STmin asked {s.stmin * 1000:.1f} ms")
        m.payload = bytes(s.data[:m.size])
        return self._emit(m, status, why)


def _unacked(m):
    if not any("EndOfMsgAck" in n for n in m.notes):
        m.notes.append("no EndOfMsgAck seen")


def _not_joined(m, n):
    if n:
        m.notes.append(f"{n} more consecutive frame{'s' if n > 1 else ''} of the broken transfer not joined")


def reassemble(t, ids, flags, dlc, data, j1939=True, isotp=OBD_PAIRS, axis_exp=-6, session=None):
    """Reassemble the transport messages of one bus's frames (columns in the raw bus
    stream's terms, in time order within each session). Returns a Result."""
    from .decode import data_frames, frame_keys

    keys = frame_keys(ids, flags)
    r = Reassembler(j1939, isotp, 10.0 ** axis_exp)
    cand = data_frames(flags) & _candidates(r, keys)
    rows = np.flatnonzero(cand)
    lengths = layout.frame_lengths(np.asarray(dlc)[rows], np.asarray(flags)[rows])
    data = np.asarray(data, np.uint8)
    t = np.asarray(t)
    sessions = np.zeros(len(rows), np.int64) if session is None else np.asarray(session)[rows]
    for i, n, s in zip(rows.tolist(), lengths.tolist(), sessions.tolist()):
        r.feed(int(t[i]), int(keys[i]), data[i, :n].tobytes(), i, s)
    messages, strays = r.close()
    return Result(messages, strays, axis_exp)


def _candidates(r, keys):
    """Rows whose id the reassembler reads, found without a Python loop over every frame."""
    keys = np.asarray(keys, np.uint32)
    ext = (keys & np.uint32(EXTENDED)) != 0
    pf = (keys >> np.uint32(16)) & np.uint32(0x3FF)
    out = np.zeros(len(keys), bool)
    if r.j1939:
        out |= ext & ((pf == PGN_TP_CM >> 8) | (pf == PGN_TP_DT >> 8))
    if r.isotp:
        out |= ext & ((pf == PF_PHYSICAL) | (pf == PF_FUNCTIONAL))
        if r.partner:
            out |= np.isin(keys, np.array(sorted(r.partner), np.uint32))
    return out
