"""The transport reassembler (logb.can.transport) on hand-built J1939 TP and ISO-TP
traffic: what completes, and how every fault is reported (never joined)."""

import numpy as np
import pytest

from logb.can import layout
from logb.can.transport import (ABORTED, COMPLETE, CONFLICT, EXTENDED, INCOMPLETE, OBD_PAIRS, OUT_OF_ORDER,
                                IsoTpPair, j1939_id, parse_pair, reassemble, service_name)
from logb.errors import UsageError

pytestmark = pytest.mark.single_backend  # no bit fields or CRCs: one run is enough

MS = 1000  # µs ticks


class Bus:
    """Frames as a logger sees them: (t µs, id key, data); extended ids carry bit 31."""

    def __init__(self):
        self.frames = []

    def add(self, t_ms, key, data):
        self.frames.append((round(t_ms * MS), key, bytes(data)))

    def columns(self):
        t = np.array([f[0] for f in self.frames], np.int64)
        ids = np.array([f[1] & 0x1FFFFFFF for f in self.frames], np.uint32)
        flags = np.array([layout.FLAG_EXTENDED if f[1] & EXTENDED else 0 for f in self.frames], np.uint8)
        fd = np.array([len(f[2]) > 8 for f in self.frames])
        flags[fd] |= layout.FLAG_FD
        dlc = np.array([layout.len_to_dlc(len(f[2])) for f in self.frames], np.uint8)
        width = 64 if fd.any() else 8
        data = np.zeros((len(t), width), np.uint8)
        for i, f in enumerate(self.frames):
            data[i, :len(f[2])] = np.frombuffer(f[2], np.uint8)
        return t, ids, flags, dlc, data

    def run(self, **kw):
        return reassemble(*self.columns(), **kw)


def tp_id(pf, sa, da, prio=7):
    return EXTENDED | (prio << 26) | (pf << 16) | (da << 8) | sa


def cm(control, size, packets, pgn, extra=0xFF):
    return [control, size & 0xFF, size >> 8, packets, extra, pgn & 0xFF, (pgn >> 8) & 0xFF, pgn >> 16]


def chunks(payload):
    n = -(-len(payload) // 7)
    padded = payload + b"\xff" * (7 * n - len(payload))
    return [bytes([q + 1]) + padded[7 * q:7 * q + 7] for q in range(n)]


def bam(bus, t_ms, sa, pgn, payload, step_ms=50, order=None, prio=6):
    packets = chunks(payload)
    bus.add(t_ms, tp_id(0xEC, sa, 0xFF, prio), cm(32, len(payload), len(packets), pgn))
    for k, q in enumerate(order or range(1, len(packets) + 1)):
        bus.add(t_ms + step_ms * (k + 1), tp_id(0xEB, sa, 0xFF), packets[q - 1])


PAYLOAD_A = bytes(range(1, 21))  # 20 bytes: 3 packets
PAYLOAD_B = bytes(range(100, 135))  # 35 bytes: 5 packets


def test_interleaved_bams_of_two_sources_both_complete():
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, PAYLOAD_A)
    bam(bus, 10, 0x02, 0xFECA, PAYLOAD_B)  # its packets fall between source 1's
    bus.frames.sort(key=lambda f: f[0])
    r = bus.run()
    assert [(m.source, m.status, m.payload) for m in r.messages] == [(1, COMPLETE, PAYLOAD_A),
                                                                     (2, COMPLETE, PAYLOAD_B)]
    a = r.messages[0]
    assert a.kind == "BAM" and a.pgn == 0xFECA and a.destination == 0xFF and a.size == 20
    assert a.can_id == EXTENDED | j1939_id(6, 0xFECA, 0x01, 0xFF) == EXTENDED | 0x18FECA01
    assert a.start == 0 and a.end == 150 * MS and len(a.rows) == 4 and not a.notes
    assert r.counts() == {COMPLETE: 2, INCOMPLETE: 0, ABORTED: 0, OUT_OF_ORDER: 0, CONFLICT: 0, "stray": 0,
                          "notes": 0}


def test_lost_packet_is_reported_and_the_rest_never_joined():
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, PAYLOAD_B, order=[1, 2, 4, 5])
    (m,) = bus.run().messages
    assert m.status == INCOMPLETE and m.detail == "missing packet 3 of 5"
    assert m.payload == PAYLOAD_B[:14]  # up to the gap only


def test_out_of_order_sequence_numbers():
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, PAYLOAD_B, order=[1, 2, 4, 3, 5])
    (m,) = bus.run().messages
    assert m.status == OUT_OF_ORDER and m.detail == "packet 3 out of sequence"


def test_a_new_bam_of_the_same_source_conflicts_or_times_the_old_one_out():
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, PAYLOAD_B, order=[1, 2])
    bam(bus, 200, 0x01, 0xFECA, PAYLOAD_A)  # 100 ms after packet 2: the old one was cut off
    bam(bus, 1000, 0x01, 0xFEE0, PAYLOAD_B, order=[1])
    bam(bus, 3000, 0x01, 0xFECA, PAYLOAD_A)  # 1.95 s later: the old one timed out (T1)
    r = bus.run()
    assert [(m.status, m.detail) for m in r.messages] == [
        (CONFLICT, "missing packets 3..5 of 5: a new BAM from 0x01 began"),
        (COMPLETE, ""),
        (INCOMPLETE, "missing packets 2..5 of 5: no packet for 1.950 s (T1 0.75 s)"),
        (COMPLETE, "")]


def test_bam_timing_is_reported_not_enforced():
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, PAYLOAD_A, step_ms=800)  # past T1 between packets
    bam(bus, 5000, 0x02, 0xFECA, PAYLOAD_A, step_ms=5)  # faster than J1939-21's 50 ms
    a, b = bus.run().messages
    assert a.status == b.status == COMPLETE
    assert a.notes == [f"T1: packet {q} 0.800 s after the last frame (limit 0.75 s)" for q in (1, 2, 3)]
    assert b.notes == ["BAM packets 5.0 ms apart (J1939-21: 50..200 ms)"]


def rts_session(bus, t, sa, da, pgn, payload, windows, lose=(), ack=True):
    """RTS, then per window (next, count) a CTS from da and the packets it asks for; `lose`:
    (window index, packet) pairs not sent."""
    packets = chunks(payload)
    bus.add(t, tp_id(0xEC, sa, da), cm(16, len(payload), len(packets), pgn, 2))
    for w, (nxt, count) in enumerate(windows):
        t += 10
        bus.add(t, tp_id(0xEC, da, sa), [17, count, nxt, 0xFF, 0xFF] + list(pgn.to_bytes(3, "little")))
        for q in range(nxt, nxt + count):
            t += 10
            if (w, q) not in lose:
                bus.add(t, tp_id(0xEB, sa, da), packets[q - 1])
    if ack:
        bus.add(t + 10, tp_id(0xEC, da, sa), cm(19, len(payload), len(packets), pgn))
    return t


def test_rts_cts_with_windows_retransmission_and_ack():
    bus = Bus()
    # window 1..2, 3..4 with packet 3 lost, the receiver asks for 3 again, then 5
    rts_session(bus, 0, 0x11, 0x22, 0xD000, PAYLOAD_B, [(1, 2), (3, 2), (3, 1), (5, 1)], lose={(1, 3)})
    rts_session(bus, 1000, 0x33, 0x22, 0xD000, PAYLOAD_A, [(1, 3)], ack=False)
    a, b = bus.run().messages
    assert a.status == COMPLETE and a.payload == PAYLOAD_B and a.kind == "RTS/CTS"
    assert a.source == 0x11 and a.destination == 0x22 and a.can_id == EXTENDED | 0x1CD02211
    assert "retransmission of packets 3..3 requested" in a.notes
    assert any(n.startswith("EndOfMsgAck after 0.010 s") for n in a.notes)
    assert b.status == COMPLETE and b.notes == ["no EndOfMsgAck seen"]


def test_rts_cts_abort_and_lost_packet_without_retransmission():
    bus = Bus()
    t = rts_session(bus, 0, 0x11, 0x22, 0xD000, PAYLOAD_B, [(1, 2)], ack=False)
    bus.add(t + 10, tp_id(0xEC, 0x22, 0x11), cm(255, 0, 0, 0xD000, 0xFF)[:1] + [3] + [0xFF] * 3 + [0, 0xD0, 0])
    rts_session(bus, 1000, 0x11, 0x22, 0xD000, PAYLOAD_A, [(1, 3)], lose={(0, 2)}, ack=False)
    a, b = bus.run().messages
    assert a.status == ABORTED and a.detail == "TP.Conn_Abort from 0x22: a timeout occurred"
    assert a.payload == PAYLOAD_B[:14]
    assert b.status == INCOMPLETE and b.detail == "missing packet 2 of 3: the recording ended"


def test_stray_frames_are_listed():
    bus = Bus()
    bus.add(0, tp_id(0xEB, 0x05, 0xFF), chunks(PAYLOAD_A)[0])
    bus.add(1, tp_id(0xEC, 0x22, 0x11), [17, 1, 1, 0xFF, 0xFF, 0, 0xD0, 0])
    bus.add(2, tp_id(0xEC, 0x22, 0x11), [255, 3, 0xFF, 0xFF, 0xFF, 0, 0xD0, 0])
    r = bus.run()
    assert not r.messages
    assert [s.what for s in r.strays] == [
        "TP.DT from 0x05 (packet 1): no BAM open",
        "TP.CM_CTS from 0x22 to 0x11: no RTS open",
        "TP.Conn_Abort from 0x22 to 0x11 (reason 3: a timeout occurred): no RTS open"]
    assert r.counts()["stray"] == 3


def test_a_session_boundary_closes_what_is_open():
    bus = Bus()
    bam(bus, 0, 0x01, 0xFECA, PAYLOAD_B, order=[1, 2])
    bam(bus, 300, 0x01, 0xFECA, PAYLOAD_A)
    t, ids, flags, dlc, data = bus.columns()
    session = np.array([0, 0, 0, 1, 1, 1, 1])
    a, b = reassemble(t, ids, flags, dlc, data, session=session).messages
    assert a.status == INCOMPLETE and a.detail.endswith(": the recording session ended") and b.complete


# ---------------------------------------------------------------- ISO-TP

def isotp_multi(bus, t, tx, rx, payload, bs=0, stmin=0, step=1, fc=True, addr=None, fc_before=()):
    """FF on tx, FC(CTS) on rx (again after every bs CFs), then the CFs."""
    pre = [] if addr is None else [addr]
    ff = pre + [0x10 | (len(payload) >> 8), len(payload) & 0xFF] + list(payload[:6 - len(pre)])
    bus.add(t, tx, ff)
    rest, sn, k = payload[6 - len(pre):], 1, 0
    for extra in fc_before:
        t += step
        bus.add(t, rx, pre + [0x30 | extra, 0, 0])
    if fc:
        t += step
        bus.add(t, rx, pre + [0x30, bs, stmin])
    while rest:
        t += step
        room = 7 - len(pre)
        bus.add(t, tx, pre + [0x20 | sn] + list(rest[:room]))
        rest, sn, k = rest[room:], (sn + 1) % 16, k + 1
        if bs and k % bs == 0 and rest:
            t += step
            bus.add(t, rx, pre + [0x30, bs, stmin])
    return t


def test_uds_request_and_long_response_with_sn_wrap():
    bus = Bus()
    bus.add(0, 0x7E0, [0x03, 0x22, 0xF1, 0x90, 0, 0, 0, 0])  # ReadDataByIdentifier VIN
    vin = b"\x62\xf1\x90" + bytes(range(200))  # 203 bytes: 29 CFs, SN wraps twice
    isotp_multi(bus, 10, 0x7E8, 0x7E0, vin, bs=8, stmin=0)
    req, resp = bus.run().messages
    assert (req.kind, req.status, req.payload, req.service) == ("single", COMPLETE, b"\x22\xf1\x90",
                                                                 "ReadDataByIdentifier")
    assert req.source == 0x7E0 and req.destination == 0x7E8
    assert (resp.kind, resp.status, resp.size, resp.payload) == ("multi", COMPLETE, 203, vin)
    assert resp.service == "ReadDataByIdentifier+" and not resp.notes
    assert len(resp.rows) == 1 + 29 + 4  # FF, CFs, an FC per block of 8


def test_service_names():
    assert service_name(b"\x7f\x22\x31") == "ReadDataByIdentifier- requestOutOfRange"
    assert service_name(b"\x7f\x27\x78") == "SecurityAccess- requestCorrectlyReceived-ResponsePending"
    assert service_name(b"\x41\x0c\x1a\xf8") == "OBD ShowCurrentData+"
    assert service_name(b"\x7f\x22") == "NegativeResponse (short)"
    assert service_name(b"\xa5") == ""


def test_flow_control_wait_then_overflow():
    bus = Bus()
    isotp_multi(bus, 0, 0x7E8, 0x7E0, bytes(20), fc_before=(1, 1))  # two WAITs, then CTS
    isotp_multi(bus, 100, 0x7E9, 0x7E1, bytes(40), fc=False, fc_before=(2,))  # OVFLW
    a, b = bus.run().messages
    assert a.status == COMPLETE and a.notes == ["2 flow control waits (FS 1)"]
    assert b.status == ABORTED and b.detail == "6 of 40 bytes: the receiver's flow control said overflow (FS 2)"


def test_lost_and_repeated_consecutive_frames():
    bus = Bus()
    payload = bytes(range(40))  # FF + 5 CFs
    isotp_multi(bus, 0, 0x7E8, 0x7E0, payload)
    del bus.frames[3]  # CF 2
    isotp_multi(bus, 100, 0x7E9, 0x7E1, payload)
    bus.frames.insert(len(bus.frames) - 2, bus.frames[-3])  # CF 3 again before CF 4
    r = bus.run()
    a, b = r.messages
    assert a.status == INCOMPLETE and a.detail == "13 of 40 bytes: missing consecutive frame 2"
    assert a.notes == ["2 more consecutive frames of the broken transfer not joined"] and a.payload == payload[:13]
    assert b.status == OUT_OF_ORDER and b.detail == "27 of 40 bytes: CF 4 has SN 3 where 4 was due"
    assert not r.strays


def test_cf_before_flow_control_and_timeouts():
    bus = Bus()
    isotp_multi(bus, 0, 0x7E8, 0x7E0, bytes(20), fc=False)
    isotp_multi(bus, 100, 0x7E9, 0x7E1, bytes(20), step=1500, stmin=20)
    a, b = bus.run().messages
    assert a.status == COMPLETE and a.notes == ["CF 1 before a flow control (CTS) allowed it"]
    assert b.status == COMPLETE and b.notes == [
        "N_Bs: flow control 1.500 s after the last frame (limit 1.0 s)",
        "N_Cr: CF 1 1.500 s after the last (limit 1.0 s)",
        "N_Cr: CF 2 1.500 s after the last (limit 1.0 s)"]


def test_stmin_and_block_size_violations():
    bus = Bus()
    isotp_multi(bus, 0, 0x7E8, 0x7E0, bytes(40), stmin=10, step=2)
    t = isotp_multi(bus, 100, 0x7E9, 0x7E1, bytes(40), bs=2, step=20)
    bus.frames = [f for f in bus.frames if not (f[1] == 0x7E1 and f[0] > 121 * MS)]  # the block FCs lost
    a, b = bus.run().messages
    assert a.notes == ["CFs 2.0 ms apart where STmin asked 10.0 ms"]
    assert b.status == COMPLETE and b.notes == ["CF 3 before a flow control (CTS) allowed it"]
    assert t > 100


def test_extended_addressing_and_interleaved_targets():
    bus = Bus()
    pair = IsoTpPair(0x6F1, 0x612, extended_addressing=True)
    a = bytes(range(30))
    b = bytes(range(50, 70))
    isotp_multi(bus, 0, 0x6F1, 0x612, a, addr=0x12, step=2)
    isotp_multi(bus, 1, 0x6F1, 0x612, b, addr=0x40, step=2)  # another target on the same id
    bus.frames.sort(key=lambda f: f[0])
    r = bus.run(isotp=[pair])
    done = {m.address: m for m in r.messages}
    assert done[0x12].payload == a and done[0x40].payload == b
    assert all(m.status == COMPLETE for m in r.messages)


def test_can_fd_escapes_and_29_bit_fixed_addressing():
    bus = Bus()
    long_sf = bytes(range(60))
    bus.add(0, EXTENDED | 0x18DA10F1, [0x00, 60] + list(long_sf) + [0xCC, 0xCC])  # 64-byte FD SF
    big = bytes(i % 251 for i in range(5000))
    ff = [0x10, 0x00] + list(len(big).to_bytes(4, "big")) + list(big[:58])  # 32-bit FF_DL
    bus.add(10, EXTENDED | 0x18DAF110, ff)
    bus.add(11, EXTENDED | 0x18DA10F1, [0x30, 0, 0])
    rest, sn, t = big[58:], 1, 12
    while rest:
        bus.add(t, EXTENDED | 0x18DAF110, [0x20 | sn] + list(rest[:63]))
        rest, sn, t = rest[63:], (sn + 1) % 16, t + 1
    sf, multi = bus.run().messages
    assert sf.payload == long_sf and sf.destination == EXTENDED | 0x18DAF110
    assert multi.status == COMPLETE and multi.size == 5000 and multi.payload == big


def test_functional_request_and_unknown_ids():
    bus = Bus()
    bus.add(0, 0x7DF, [0x02, 0x01, 0x0C, 0, 0, 0, 0, 0])
    bus.add(1, 0x123, [0x02, 0x01, 0x0C, 0, 0, 0, 0, 0])  # not an ISO-TP id
    bus.add(2, 0x7E8, [0x21, 1, 2, 3, 4, 5, 6, 7])
    r = bus.run()
    (m,) = r.messages
    assert m.service == "OBD ShowCurrentData" and m.destination == -1
    assert [s.what for s in r.strays] == ["consecutive frame (SN 1) without a first frame"]
    assert not bus.run(isotp=None).messages and not bus.run(isotp=None).strays


def test_parse_pair():
    assert parse_pair("0x7E0:0x7E8") == IsoTpPair(0x7E0, 0x7E8)
    assert parse_pair("18DA10F1:18DAF110") == IsoTpPair(EXTENDED | 0x18DA10F1, EXTENDED | 0x18DAF110)
    assert parse_pair("0x00000700:0x708").request == EXTENDED | 0x700  # 8 digits: a 29-bit id
    for bad in ("0x7E0", "0x7E0:", "zz:0x7E8", "0x7E0:0x7E0", "0x20000000:0x1"):
        with pytest.raises(UsageError):
            parse_pair(bad)
    assert OBD_PAIRS[0] == IsoTpPair(0x7E0, 0x7E8)
