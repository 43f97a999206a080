"""logb dump: frames or records, human-readable or as JSON Lines."""

import dataclasses

from ..frames import FRAME_CLASSES
from ..scan import FrameRef, FrameScanner
from ..tables import FrameType
from .common import EXIT_DAMAGED, EXIT_OK, add_recover, column_values, dumps, open_logb
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

--stream NAME|UUID limits the output to one stream. The exit status is that
of `logb verify` (0 intact, 1 damaged/truncated/rejected), after the output."""


def add_arguments(p):
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--records", action="store_true", help="dump records (the default)")
    mode.add_argument("--frames", action="store_true", help="dump frames")
    p.add_argument("file", help="a .logb file, or - for standard input")
    p.add_argument("--stream", metavar="NAME|UUID", help="only this stream")
    p.add_argument("--json", action="store_true", help="JSON Lines: one object per record or frame")
    add_recover(p)


def run(args, out):
    with open_logb(args.file, recover=args.recover) as f:
        if args.frames:
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


def _records(f, args, out):
    streams = [f.stream(args.stream)] if args.stream else None
    for stream, fl in f.data_frames(streams):
        batch = stream.decode_frame(fl)
        if batch is None:
            continue
        _emit_batch(f, stream, fl, batch, args.json, out)


def _emit_batch(f, stream, fl, batch, as_json, out):
    from ..convert import physical

    schema = stream.schema
    names = [fd.name for fd in schema.fields]
    raw = {n: column_values(batch.raw[n]) for n in names}
    phys = {}
    for fd in schema.fields:
        phys[fd.name] = raw[fd.name] if fd.conversion.is_identity else column_values(
            physical(fd.conversion, batch.raw[fd.name]))
    axis = batch.axis.tolist()
    clock = stream.session_of(fl).clock if schema.is_time else None
    uuid, name = stream.uuid.hex(), stream.name
    for i in range(batch.count):
        wall = clock.wall(axis[i], schema.axis_exp) if clock else None
        if as_json:
            rec = {"stream": uuid, "name": name, "run_id": batch.run_id, "axis": axis[i],
                   "raw": {n: raw[n][i] for n in names}, "phys": {n: phys[n][i] for n in names},
                   "wall": wall.as_json() if wall else None}
            out.write(dumps(rec) + "\n")
        else:
            vals = " ".join(f"{n}={phys[n][i]!r}" for n in names)
            when = f" wall={wall.ns}({wall.basis})" if wall and wall.ns is not None else ""
            out.write(f"{name} run={batch.run_id} axis={axis[i]}{when} {vals}\n")
