"""logb transport: J1939 TP and ISO-TP messages reassembled, listed with their faults."""

import csv
import sys

import numpy as np

from .common import (EXIT_DAMAGED, EXIT_OK, add_id_filter, add_recover, add_time_arguments, dumps, file_timeline,
                     input_help, open_input, output)

HELP = "reassemble J1939 TP (BAM, RTS/CTS) and ISO-TP messages; list them and every fault"
DESCRIPTION = """\
Reassemble the transport-protocol messages of every CAN bus of FILE and list
them, one row per message, in time order:

  J1939-21   TP.CM (PGN 0xEC00: BAM, RTS, CTS, EndOfMsgAck, Conn_Abort) with
             its TP.DT packets (0xEB00). BAMs are told apart by source, RTS/CTS
             sessions by (source, destination), so interleaved transfers of
             different nodes reassemble side by side.
  ISO-TP     single, first, consecutive and flow-control frames (ISO 15765-2,
             CAN FD lengths included) on request/response id pairs: by default
             OBD/UDS 0x7E0..0x7E7 answered on +8 and the functional 0x7DF, and
             29-bit 0x18DA<target><source> / 0x18DB...; --isotp names others.
             The UDS or OBD service of each payload is named (0x22
             ReadDataByIdentifier, `+` its positive response 0x62, `-` and the
             NRC name for a 0x7F negative response).

Nothing is joined that was not seen whole. status is one of
  complete       every byte, in order
  incomplete     a packet or consecutive frame never came (detail: which)
  aborted        TP.Conn_Abort (with its reason) or an ISO-TP flow control
                 overflow (FS 2)
  out-of-order   a sequence number came after a later one, or repeated with
                 other data
  conflict       a new BAM/RTS of the same sender, or a new SF/FF on the same
                 id, began before the transfer ended
and `notes` say what bent the rules without breaking the message: J1939
T1..T4 and ISO-TP N_Bs/N_Cr timeouts exceeded, BAM packets under 50 ms
apart, STmin or block size not kept, flow-control waits, a missing
EndOfMsgAck. Frames that belong to no transfer (a TP.DT without its TP.CM,
a CF without its FF) are rows of status `stray`. Counts go to stderr.

Multi-packet J1939 messages of a PGN the DBC knows also decode with their
signals: `logb decode FILE --dbc j1939.dbc`.

  logb transport truck.logb --j1939
  logb transport diag.log --isotp 0x7E0:0x7E8 --format csv -o uds.csv
  logb transport gw.blf --isotp-ext 0x6F1:0x612 --format json

id: J1939, the id the PGN would have in one frame (priority, PGN, destination
for PDU1, source: what a DBC lists); ISO-TP, the id the data came on, and
`partner` the id its flow control used. --id keeps messages by that id.

Exit status: 0 listed (whatever the messages' status), 1 damaged input, 2
neither Logb nor a trace, 64 usage error."""

COLUMNS = ("start", "end", "bus", "protocol", "kind", "id", "partner", "source", "destination", "pgn", "address",
           "length", "received", "status", "detail", "service", "payload", "frames", "notes")
TABLE_PAYLOAD = 24  # bytes of payload a table row shows


def add_arguments(p):
    p.add_argument("file", help=input_help())
    p.add_argument("--j1939", action="store_true",
                   help="J1939 TP (alone unless --isotp is given too; neither: both protocols)")
    p.add_argument("--isotp", action="append", metavar="REQ:RESP", default=[],
                   help="an ISO-TP request:response id pair, e.g. 0x7E0:0x7E8 (repeatable; replaces the "
                        "OBD/UDS defaults); ids over 0x7FF, or of 8 hex digits, are 29-bit")
    p.add_argument("--isotp-ext", action="append", metavar="REQ:RESP", default=[],
                   help="a pair with extended addressing: the first data byte is the target address")
    add_id_filter(p)
    add_time_arguments(p)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="table (default), csv, or json (JSON Lines: one object per row)")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of standard output")
    add_recover(p)


def protocols(args):
    """(j1939, isotp pairs or None) from the options."""
    from ..can.transport import OBD_PAIRS, parse_pair

    pairs = [parse_pair(x) for x in args.isotp] + [parse_pair(x, True) for x in args.isotp_ext]
    if not args.j1939 and not pairs:
        return True, OBD_PAIRS
    return args.j1939, (pairs or None)


def run(args, out):
    from ..can.bus import all_bus_frames
    from ..can.transport import reassemble

    j1939, pairs = protocols(args)
    with open_input(args.file, recover=args.recover) as f:
        rows, starts, ends = [], [], []  # per row: its cells; Timelines of its first and last frame, per bus
        for name, b in all_bus_frames(f).items():
            r = reassemble(b.t, b.id, b.flags, b.dlc, b.data, j1939, pairs, b.axis_exp, b.session)
            rows += [_message_row(name, m) for m in r.messages] + [_stray_row(name, s, b) for s in r.strays]
            t0 = [m.start for m in r.messages] + [s.t for s in r.strays]
            t1 = [m.end for m in r.messages] + [s.t for s in r.strays]
            sessions = np.array([m.session for m in r.messages] + [s.session for s in r.strays], np.int64)
            starts.append(file_timeline(f, np.array(t0, np.int64), b.axis_exp, sessions))
            ends.append(file_timeline(f, np.array(t1, np.int64), b.axis_exp, sessions))
        clean = f.report.clean
    start, end = _joined(starts), _joined(ends)
    keep = np.ones(len(rows), bool)
    if args.ids is not None:
        keep &= args.ids.mask(np.array([row.pop("_id") for row in rows], np.int64))
    if args.window is not None and rows:
        keep &= start.select(args.window, "the transfers")
    basis = start.basis(args.time)
    order = [k for k in np.lexsort((start.device_s,)).tolist() if keep[k]]
    t0, t1 = start.texts(basis), end.texts(basis)
    rows = [dict(rows[k], start=t0[k], end=t1[k]) for k in order]
    _summary(rows)
    if args.output:
        with output(args.output, [args.file]) as tmp, open(tmp, "w", newline="") as fh:
            _write(fh, rows, args.format, basis)
    else:
        _write(out, rows, args.format, basis)
    return EXIT_OK if clean else EXIT_DAMAGED


def _joined(timelines):
    """One Timeline over the rows of every bus (dated only when every bus is)."""
    from .common import Timeline

    if not timelines:
        return Timeline(np.zeros(0))
    dated = all(t.dated for t in timelines)
    return Timeline(np.concatenate([t.device_s for t in timelines]),
                    np.concatenate([t.wall_ns for t in timelines]) if dated else None,
                    timelines[0].origin_s, -max(t.digits for t in timelines))


def _hex(key):
    if key is None or key < 0:
        return ""
    return f"0x{key & 0x1FFFFFFF:08X}" if key & (1 << 31) else f"0x{key:03X}"


def _message_row(bus, m):
    j = m.protocol == "j1939"
    return {"bus": bus, "protocol": m.protocol, "kind": m.kind, "id": _hex(m.can_id),
            "partner": "" if j else _hex(m.destination),
            "source": f"0x{m.source:02X}" if j else "", "destination": f"0x{m.destination:02X}" if j else "",
            "pgn": f"0x{m.pgn:05X}" if j else "", "address": "" if m.address is None else f"0x{m.address:02X}",
            "length": m.size, "received": len(m.payload), "status": m.status, "detail": m.detail,
            "service": m.service, "payload": m.payload.hex(), "frames": len(m.rows), "notes": "; ".join(m.notes),
            "_id": m.can_id & 0x1FFFFFFF}


def _stray_row(bus, s, b):
    from ..can.layout import frame_lengths

    row = dict.fromkeys(COLUMNS, "")
    n = int(frame_lengths(b.dlc[s.row:s.row + 1], b.flags[s.row:s.row + 1])[0])
    row.update(bus=bus, protocol=s.protocol, kind="frame", id=_hex(s.can_id), status="stray", detail=s.what,
               payload=b.data[s.row, :n].tobytes().hex(), frames=1, _id=s.can_id & 0x1FFFFFFF)
    return row


def _summary(rows):
    from ..can.transport import STATUSES

    counts = {s: 0 for s in STATUSES + ("stray",)}
    for row in rows:
        counts[row["status"]] += 1
    noted = sum(1 for row in rows if row["notes"])
    kinds = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "none"
    print(f"logb transport: {len(rows) - counts['stray']} messages, {counts['stray']} stray frames ({kinds}); "
          f"{noted} with notes", file=sys.stderr)


def _names(basis):
    suffix = {"utc": "utc", "relative": "s", "device": "device_s"}[basis]
    return [f"start_{suffix}", f"end_{suffix}"] + list(COLUMNS[2:])


def _write(fh, rows, fmt, basis):
    names = _names(basis)
    values = [[row[c] for c in COLUMNS] for row in rows]
    if fmt == "csv":
        w = csv.writer(fh)
        w.writerow(names)
        w.writerows(values)
    elif fmt == "json":
        for v in values:
            obj = dict(zip(names, v))
            if basis != "utc":
                obj[names[0]], obj[names[1]] = float(obj[names[0]]), float(obj[names[1]])
            fh.write(dumps(obj) + "\n")
    else:
        fh.write(_table(names, values))


def _table(names, values):
    shown = ("start", "bus", "protocol", "kind", "id", "source", "destination", "pgn", "length", "status",
             "service", "payload")
    idx = [0] + [COLUMNS.index(c) for c in shown[1:]]
    head = [names[0]] + list(shown[1:])
    cells = []
    for v in values:
        row = [str(v[i]) for i in idx]
        p = row[-1]
        if len(p) > 2 * TABLE_PAYLOAD:
            row[-1] = p[:2 * TABLE_PAYLOAD] + "…"
        cells.append(row)
        for extra in (v[COLUMNS.index("detail")], v[COLUMNS.index("notes")]):
            if extra:
                cells.append(["", "", "", "", "", "", "", "", "", "", "", f"  {extra}"])
    widths = [max([len(h)] + [len(c[k]) for c in cells if not c[-1].startswith("  ") or k < len(head) - 1])
              for k, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
    for c in cells:
        if c[-1].startswith("  ") and not c[0]:
            lines.append(" " * (sum(widths[:2]) + 4) + c[-1].strip())
        else:
            lines.append("  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())
    return "\n".join(lines) + "\n"
