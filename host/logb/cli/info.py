"""logb info: what a file holds and how intact it is."""

import numpy as np

from ..tables import LOST_SINK, AxisKind
from .common import EXIT_DAMAGED, EXIT_OK, add_recover, dumps, file_timeline, input_help, open_input, schema_json

HELP = "show sessions, segments, streams, runs, anchors, attachments and integrity"
DESCRIPTION = """\
Scan FILE, decode every DATA frame once (so the record counts are final) and
print what it holds. Damage never stops it: skipped byte ranges, truncation
and rejected frames are listed with their causes.

With --json the output is one JSON object (a public contract, see README):
  {"streams": [{"uuid", "name", "records", "rejected", ...}],
   "skipped": [{"start", "end", "cause"}], "truncated": bool, ...}

The recording's start, end and duration (UTC when dated), per CAN bus its
frames and distinct ids, and per per-message stream its CAN id; per stream
the frames its writer lost and counted (logb.lost.controller, .buffer,
.invalid: "lost" in --json); per session the bytes its writer could not
write to its medium (logb.lost.sink: "lost_sink" in --json). Streams without a record (a DBC's messages
never on the bus) are counted, not listed, unless --all. FILE may be a CAN
trace, read directly (frames no record holds are counted as invalid).

  logb info drive.logb
  logb info durango-candump.log --json

Exit status: 0 intact, 1 damaged/truncated/rejected records, 2 not Logb,
3 unsupported version."""


_LOST = {"controller": "by the bus controller (overrun)", "buffer": "by the writer (buffer full)",
         "invalid": "refused (no record holds them as given, SPEC §13.1)"}


def add_arguments(p):
    p.add_argument("file", help=input_help("a .logb file, - for standard input"))
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--all", action="store_true", help="also list the streams without records")
    add_recover(p)


def summary(f):
    rep = f.report
    streams = []
    for s in f.streams.values():
        entry = {
            "uuid": s.uuid.hex(),
            "name": s.name,
            "records": s.records,
            "rejected": s.rejected,
            "frames": len(s.frames),
            "runs": sorted({fl.header.run_id for fl in s.frames}),
            "stream_meta": s.meta,
            "lost": {key.rsplit(".", 1)[1]: n for key, n in sorted(s.lost.items())},
            "rejections": [{"offset": o, "records": n, "reason": r} for o, n, r in s.rejections],
        }
        if s.schema is not None:
            entry.update(schema_json(s.schema))
            if "logb.can.id" in entry["meta"] or "logb.can.id" in s.schema.meta_dict():
                entry["can_id"] = s.schema.meta_dict().get("logb.can.id")
        streams.append(entry)
    lost_sink = sink_lost(f)
    return {
        "size": rep.size,
        "version": f"{rep.header.major}.{rep.header.minor}" if rep.header else None,
        "sessions": [
            {
                "index": se.index,
                "id": se.id,
                "time_base": se.time_base,
                "basis": se.basis,
                "clock_source": se.meta.get("logb.clock_source"),
                "first_offset": se.first_offset,
                "segments": len(se.segments),
                "ended": se.ended,
                "lost_sink": lost_sink.get(se.index, 0),
                "meta": se.meta,
                "anchors": [
                    {"axis_ns": a.axis_ns, "wall_ns": a.wall_ns, "source": a.source,
                     "uncertainty_ns": a.uncertainty_ns}
                    for a in sorted(se.anchors, key=lambda a: a.axis_ns)
                ],
                "runs": [
                    {"run_id": r.run_id, "index": r.index, "params": dict(r.params)}
                    for r in se.runs.values()
                ],
            }
            for se in f.sessions
        ],
        "segments": [
            {"offset": sg.offset, "seq": sg.seq, "wall_time_ns": sg.wall_time_ns, "session": sg.session}
            for sg in f.segments
        ],
        "streams": streams,
        "attachments": [
            {"name": a.name, "media_type": a.media_type, "codec": a.codec, "raw_size": a.raw_size,
             "stored_size": len(a.stored), "offset": a.offset, "problem": a.problem}
            for a in f.attachments
        ],
        "index": [{"offset": off, "valid": ok} for off, ok in f.index_valid.items()],
        "skipped": [s.as_json() for s in rep.skipped],
        "truncated": rep.truncated,
        "truncated_at": rep.truncated_at,
        "notes": [n.as_json() for n in rep.notes],
        "frames": rep.frames,
        "span": span(f),
        "buses": buses(f),
        "clean": intact(f),
    }


def span(f):
    """The first and last record of any time stream: {start_s, end_s (relative), duration_s,
    start_utc, end_utc (None when undated)}, or None without records."""
    lo = hi = None
    for s in f.streams.values():
        if s.schema is None or not s.schema.is_time or not s.records:
            continue
        tl = file_timeline(f, s.columns(fields=[]).axis, s.schema.axis_exp)
        first, last = int(np.argmin(tl.device_s)), int(np.argmax(tl.device_s))
        ends = [(tl.relative_s[i], tl.wall_ns[i] if tl.dated else None, tl.digits) for i in (first, last)]
        lo = ends[0] if lo is None or ends[0][0] < lo[0] else lo
        hi = ends[1] if hi is None or ends[1][0] > hi[0] else hi
    if lo is None:
        return None
    from .common import utc_text

    def utc(end):
        return None if end[1] is None else str(utc_text([end[1]], end[2])[0])

    digits = max(lo[2], hi[2])  # float seconds since 1970 carry noise below the tick
    return {"start_s": round(float(lo[0]), digits), "end_s": round(float(hi[0]), digits),
            "duration_s": round(float(hi[0] - lo[0]), digits), "start_utc": utc(lo), "end_utc": utc(hi)}


def buses(f):
    """Per CAN bus (every frame, whatever the routing): {name, frames, ids, fd}."""
    from ..can.bus import all_bus_frames, buses as groups

    if not groups(f):
        return []
    return [{"name": name, "frames": len(b.t), "ids": int(len(np.unique(b.id))), "fd": b.data.shape[1] > 8}
            for name, b in all_bus_frames(f).items()]




def sink_lost(f):
    """Per session index, the bytes its writer produced and the sink did not take (file-scope META
    logb.lost.sink, SPEC §4.5, cumulative: the last value the session states); sessions stating 0 or
    nothing are left out, an unreadable value is -1 (a loss of unknown size)."""
    out = {}
    for se in f.sessions:
        v = se.meta.get(LOST_SINK)
        if v is not None and v != "0":
            out[se.index] = int(v) if v.isascii() and v.isdigit() else -1
    return out


def sink_text(n):
    size = "an unreadable count of" if n < 0 else f"{n}"
    return (f"the writer could not write {size} bytes to its medium (failed or short writes, "
            f"logb.lost.sink): the frames in them are missing")


def intact(f):
    """No damage, no truncation, no rejected records, no malformed frames."""
    return (f.report.clean and not any(s.rejected for s in f.streams.values())
            and not any(n.kind == "malformed" for n in f.report.notes))


def _human(info, out, all_streams=False):
    w = out.write
    version = info["version"] or "(no file header: read from its first SYNC)"
    w(f"Logb {version}, {info['size']} bytes, {info['frames']} frames, "
      f"{len(info['segments'])} segments, {len(info['sessions'])} sessions\n")
    for se in info["sessions"]:
        w(f"session {se['index']}: id={se['id']} time_base={se['time_base']} ({se['basis']}) "
          f"segments={se['segments']} {'closed' if se['ended'] else 'not closed'}\n")
        if se["lost_sink"]:
            w(f"  LOST: {sink_text(se['lost_sink'])}\n")
        for a in se["anchors"]:
            unc = "unknown" if a["uncertainty_ns"] is None else f"±{a['uncertainty_ns']} ns"
            w(f"  anchor axis={a['axis_ns']} ns → wall={a['wall_ns']} ns ({a['source']}, {unc})\n")
        for r in se["runs"]:
            w(f"  run {r['run_id']} #{r['index']}: {r['params']}\n")
    sp = info["span"]
    if sp:
        when = f"{sp['start_utc']} to {sp['end_utc']}, " if sp["start_utc"] else ""
        w(f"recording: {when}{sp['duration_s']:.6f} s ({sp['start_s']:.6f} to {sp['end_s']:.6f} s after the "
          f"start)\n")
    for b in info["buses"]:
        w(f"bus {b['name']}: {b['frames']} frames, {b['ids']} ids{' (CAN FD)' if b['fd'] else ''}\n")
    hidden = 0
    for s in info["streams"]:
        if not s["records"] and not s["rejected"] and not any(s["lost"].values()) and not all_streams:
            hidden += 1
            continue
        can_id = f" id {s['can_id']}" if s.get("can_id") else ""
        w(f"stream {s['name']!r}{can_id} {s['uuid']}: {s['records']} records in {s['frames']} frames")
        w(f", {s['rejected']} rejected\n" if s["rejected"] else "\n")
        lost = {key: n for key, n in s["lost"].items() if n}  # (writers restate zeros: nothing to say)
        if lost:
            w(f"  lost (the writer's counts, never written): "
              f"{', '.join(f'{n} {_LOST[key]}' for key, n in lost.items())}\n")
        if "axis" in s:
            ax = s["axis"]
            exp = f" tick=1e{ax['exp']} s" if ax["kind"] == AxisKind.time.name else ""
            w(f"  axis: {ax['kind']} {ax['mode']}{exp} unit={ax['unit']!r}\n")
            for fd in s["fields"]:
                unit = f" [{fd['unit']}]" if fd["unit"] else ""
                w(f"  {fd['name']}: {fd['type']} {fd['bit_width']}b@{fd['bit_offset']} "
                  f"{fd['byte_order']}{' variable' if fd['variable'] else ''}{unit} {fd['conversion']['type']}\n")
        for r in s["rejections"]:
            w(f"  rejected at {r['offset']}: {r['records']} records: {r['reason']}\n")
    if hidden:
        w(f"{hidden} streams without records not shown (--all lists them)\n")
    for a in info["attachments"]:
        w(f"attachment {a['name']!r} ({a['media_type']}, {a['raw_size']} bytes)"
          f"{': ' + a['problem'] if a['problem'] else ''}\n")
    for s in info["skipped"]:
        w(f"SKIPPED bytes {s['start']}..{s['end']} ({s['end'] - s['start']} bytes): {s['cause']}\n")
    if info["truncated"]:
        w(f"TRUNCATED: the input ends inside a frame or damage starting at offset {info['truncated_at']}\n")
    for n in info["notes"]:
        w(f"note @{n['offset']} [{n['kind']}] {n['message']}\n")
    w("integrity: intact\n" if info["clean"] else "integrity: NOT intact (see above)\n")


def run(args, out):
    with open_input(args.file, recover=args.recover) as f:
        f.validate()
        info = summary(f)
    if args.json:
        out.write(dumps(info) + "\n")
    else:
        _human(info, out, args.all)
    return EXIT_OK if info["clean"] else EXIT_DAMAGED
