"""logb dump: frames or records, human-readable or as JSON Lines."""

import dataclasses

from ..frames import FRAME_CLASSES
from ..scan import FrameRef, FrameScanner
from ..tables import FrameType
import numpy as np

from .common import (EXIT_DAMAGED, EXIT_OK, add_id_filter, add_recover, add_time_arguments, column_values, dumps,
                     file_timeline, hex_id, input_help, open_input)
from .info import intact

HELP = "print frames or records (human-readable, or JSON Lines with --json)"
DESCRIPTION = """\
Print what a file contains, in file order.

  --records (default)  one line per record; with --json one object per record:
      {"stream": uuid-hex, "name", "run_id", "axis", "raw": {field: value},
       "phys": {field: value}, "wall": {"ns", "basis", "uncertainty_ns", "extrapolated"} | null}
      axis: integer ticks for time axes (tick = 10^axis_exp s), a number otherwise.
      Bytes are hex strings, complex numbers [re, im], text conversions strings,
      missing values null.
  --frames             one line per CRC-valid frame (offset, type, stream_id, length).

  --format candump     every CAN frame of every bus (whatever the routing,
      docs/SPEC.md §13.4) in time order as `candump -L` writes it:
      (1742339205.233154) can0 140#8004000000028010 — Unix seconds when dated,
      else seconds after the start; python-can, cantools and can-utils read it.

Raw CAN frames read as a CAN engineer does: time, bus, hex id (3 digits, 8
for extended), [DLC], the data bytes the DLC says (not the stored padding)
and flags as letters (X extended, R remote, E error, F FD, B BRS, S ESI,
T sent by the logger). Times follow --time (default UTC when dated, else
seconds after the start); --window keeps a time range, --id CAN ids.

  logb dump drive.logb --id 0x100-0x1FF --window 10 12
  logb dump drive.blf --format candump | grep ' 1A0#'

FILE may be a CAN trace (candump, ASC, BLF, TRC), read directly.
--stream NAME|UUID limits the output to one stream. The exit status is that
of `logb verify` (0 intact, 1 damaged/truncated/rejected), after the output."""

_FLAG_LETTERS = "XREFBST"  # layout.FLAG_NAMES, bit by bit


def add_arguments(p):
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--records", action="store_true", help="dump records (the default)")
    mode.add_argument("--frames", action="store_true", help="dump frames")
    p.add_argument("file", help=input_help("a .logb file, - for standard input"))
    p.add_argument("--stream", metavar="NAME|UUID", help="only this stream (candump: this bus)")
    p.add_argument("--json", action="store_true", help="JSON Lines: one object per record or frame")
    p.add_argument("--format", choices=("text", "candump"), default="text",
                   help="candump: every CAN frame as `candump -L` lines (default: text)")
    add_id_filter(p)
    add_time_arguments(p)
    add_recover(p)


def run(args, out):
    from ..errors import UsageError

    if args.format == "candump" and (args.frames or args.json):
        raise UsageError("--format candump prints frames of the buses, one line each: not with --frames or --json")
    with open_input(args.file, recover=args.recover) as f:
        if args.format == "candump":
            _candump(f, args, out)
        elif args.frames:
            _frames(f, args, out)
        else:
            _records(f, args, out)
        if args.frames or args.stream:  # records mode already decoded every frame
            f.validate()
        return EXIT_OK if intact(f) else EXIT_DAMAGED


def _frames(f, args, out):
    only = f.stream(args.stream) if args.stream else None
    locs = {fl.offset: (s, fl) for s in f.streams.values() for fl in s.frames}
    # damage is the file's report (the exit status), not a line here
    for fr in (ev for ev in FrameScanner().scan(f.buf) if type(ev) is FrameRef):
        name = FrameType(fr.type).name if fr.type in FrameType._value2member_map_ else f"0x{fr.type:02x}"
        obj = {"offset": fr.offset, "type": name, "stream_id": fr.stream_id, "payload_len": fr.payload_len}
        cls = FRAME_CLASSES.get(fr.type)
        if cls is not None and fr.type not in (FrameType.SCHEMA, FrameType.DATA, FrameType.ATTACH):
            try:
                obj["payload"] = _payload_json(cls.decode(fr.payload(f.buf)))
            except Exception as exc:  # a malformed payload is shown, not fatal
                obj["payload_error"] = str(exc)
        if fr.type == FrameType.DATA:
            loc = locs.get(fr.offset)
            if loc is not None:
                stream, fl = loc
                if only is not None and stream is not only:
                    continue
                h = fl.header
                obj.update(stream=stream.uuid.hex(), name=stream.name, records=h.record_count,
                           run_id=h.run_id, codec=h.codec, filter=h.filter, raw_size=h.raw_size)
        elif only is not None:
            continue
        if args.json:
            out.write(dumps(obj) + "\n")
        else:
            extra = " ".join(f"{k}={v}" for k, v in obj.items() if k not in ("offset", "type", "payload"))
            out.write(f"{obj['offset']:>10}  {obj['type']:<7} {extra}\n")


def _payload_json(v):
    """A decoded payload as JSON values, however deep (INDEX: uuid bytes inside entry tuples)."""
    if dataclasses.is_dataclass(v):
        return {f.name: _payload_json(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (tuple, list)):
        return [_payload_json(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _payload_json(x) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return v


def _candump(f, args, out):
    from ..can import formats
    from ..can.formats.candump import CAN_ERR_FLAG
    from ..can.formats.trace import merged
    from ..can.layout import FLAG_ERROR, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, frame_lengths
    from .common import Timeline

    trace = formats.read_logb(f, [args.stream] if args.stream else None)
    m = merged(trace)
    keep = np.ones(len(m.t), bool)
    if args.ids is not None:
        args.ids.require(m.id, args.file)
        keep &= args.ids.mask(m.id)
    scale = 10.0 ** trace.axis_exp
    wall = m.t * 10 ** (9 + trace.axis_exp) if trace.dated else None
    tl = Timeline(m.t * scale, wall, axis_exp=trace.axis_exp)
    keep &= tl.select(args.window, "the buses")
    # candump's stamp: Unix seconds when dated, else seconds after the start
    stamps = tl.column("device" if trace.dated and args.time in (None, "utc") else args.time or "relative")[1]
    digits = max(6, tl.digits)
    lengths = frame_lengths(m.dlc, m.flags)
    for i in np.flatnonzero(keep).tolist():
        flags, ident = int(m.flags[i]), int(m.id[i])
        data = bytes(m.data[i, :lengths[i]]).hex().upper()
        if flags & FLAG_ERROR:
            frame = f"{CAN_ERR_FLAG | ident:08X}#{data}"
        elif flags & FLAG_REMOTE:
            frame = f"{hex_id(ident, flags & FLAG_EXTENDED)}#R{int(m.dlc[i]) or ''}"
        elif flags & FLAG_FD:
            frame = f"{hex_id(ident, flags & FLAG_EXTENDED)}##{(flags >> 4) & 3:X}{data}"  # BRS, ESI bits
        else:
            frame = f"{hex_id(ident, flags & FLAG_EXTENDED)}#{data}"
        out.write(f"({stamps[i]:.{digits}f}) {m.names[m.bus[i]]} {frame}\n")


def _records(f, args, out):
    from ..can.bus import is_raw_bus_stream

    streams = [f.stream(args.stream)] if args.stream else None
    if args.ids is not None:
        raw = [s for s in (streams or f.streams.values()) if is_raw_bus_stream(s)]
        ids = [s.columns(["id"]).phys("id") for s in raw]
        args.ids.require(np.concatenate(ids) if ids else np.zeros(0, np.uint32), args.file)
    shown = 0
    for stream, fl in f.data_frames(streams):
        batch = stream.decode_frame(fl)
        if batch is None:
            continue
        shown += _emit_batch(f, stream, fl, batch, args, out, is_raw_bus_stream(stream))
    if args.window is not None and not shown:
        from ..errors import OutsideRecordingError
        raise OutsideRecordingError(f"--window {args.window.text} holds no record of "
                                    f"{args.stream or args.file}")


def _emit_batch(f, stream, fl, batch, args, out, can):
    """Print one DATA frame's records in --window (and --id, for a raw bus stream);
    returns how many."""
    from ..convert import physical

    schema = stream.schema
    names = [fd.name for fd in schema.fields]
    keep = np.ones(batch.count, bool)
    tl = None
    if schema.is_time:
        session = stream.session_of(fl)
        tl = file_timeline(f, batch.axis, schema.axis_exp, session.index)
        keep &= _inside(tl, args.window)
        basis = tl.basis(args.time)
        times = tl.texts(basis)
    if can and args.ids is not None:
        keep &= args.ids.mask(batch.raw["id"])
    if can and not args.json:
        return _can_lines(stream, batch, keep, times if tl else batch.axis.tolist(), out)
    raw = {n: column_values(batch.raw[n]) for n in names}
    phys = {}
    for fd in schema.fields:
        phys[fd.name] = raw[fd.name] if fd.conversion.is_identity else column_values(
            physical(fd.conversion, batch.raw[fd.name]))
    axis = batch.axis.tolist()
    clock = stream.session_of(fl).clock if schema.is_time else None
    uuid, name = stream.uuid.hex(), stream.name
    for i in np.flatnonzero(keep).tolist():
        wall = clock.wall(axis[i], schema.axis_exp) if clock else None
        if args.json:
            rec = {"stream": uuid, "name": name, "run_id": batch.run_id, "axis": axis[i],
                   "raw": {n: raw[n][i] for n in names}, "phys": {n: phys[n][i] for n in names},
                   "wall": wall.as_json() if wall else None}
            out.write(dumps(rec) + "\n")
        else:
            vals = " ".join(f"{n}={phys[n][i]!r}" for n in names)
            when = f" {times[i]}" if tl is not None else f" axis={axis[i]}"
            out.write(f"{name} run={batch.run_id}{when} {vals}\n")
    return int(keep.sum())


def _inside(tl, window):
    """tl.select without its error: one DATA frame outside the window is no error."""
    from ..errors import OutsideRecordingError

    try:
        return tl.select(window)
    except OutsideRecordingError:
        return np.zeros(len(tl.device_s), bool)


def _can_lines(stream, batch, keep, times, out):
    """Raw CAN frames as a CAN engineer reads them: time bus id [DLC] data flags."""
    from ..can.layout import FLAG_EXTENDED, frame_lengths

    ids, flags, dlc = batch.raw["id"], batch.raw["flags"], batch.raw["dlc"]
    lengths = frame_lengths(dlc, flags)
    data = batch.raw["data"]
    for i in np.flatnonzero(keep).tolist():
        fl = int(flags[i])
        letters = "".join(c for bit, c in enumerate(_FLAG_LETTERS) if fl >> bit & 1)
        hexid = hex_id(int(ids[i]), fl & FLAG_EXTENDED)
        payload = " ".join(f"{b:02X}" for b in bytes(data[i][:lengths[i]]))
        out.write(f"{times[i]}  {stream.name}  {hexid:>8}  [{int(dlc[i])}]  {payload:<23}  {letters}".rstrip() + "\n")
    return int(keep.sum())
