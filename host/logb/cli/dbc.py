"""logb dbc: compile a DBC into Logb schemas and the device config (LBCF)."""

import json
import sys

from ..can import layout
from ..errors import LogbError, UnreadableInputError
from .common import EXIT_DAMAGED, EXIT_OK, output, schema_json

HELP = "compile a DBC into Logb stream schemas and a device config (LBCF)"
DESCRIPTION = """\
compile: parse FILE.dbc with cantools and turn every message into a Logb
per-message stream (docs/SPEC.md §13): payload bytes plus one field per
signal (Motorola start bits converted, factor/offset as `linear`, value
tables as `value_to_text`), one stream per multiplexer branch, J1939
messages matched by PGN. The config's raw bus stream declares `exclusive`
routing (SPEC §13.4), the device default: a frame its exact per-message
stream reconstructs goes there alone; `Writer(mirror=True)` on the device
switches it to `mirror`. Anything that cannot be expressed is listed on
stderr by name. -o writes the compact device config (LBCF) a logger loads;
--json prints every entry and its schema.

  logb dbc compile vehicle.dbc -o vehicle.lbcf
  logb dbc compile vehicle.dbc --json | less
  logb dbc show vehicle.lbcf

show: list the entries of an LBCF config (--json for everything).

Exit status: 0 compiled (problems are warnings), 1 with --strict and a
problem, or a malformed config, 64 usage error."""


def add_arguments(p):
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = sub.add_parser("compile", help="DBC → schemas and LBCF config",
                       description="Compile a DBC (see `logb dbc --help`).")
    c.add_argument("dbc", help="a .dbc file")
    c.add_argument("-o", "--output", metavar="OUT.lbcf", help="write the device config here")
    c.add_argument("--json", action="store_true", help="print the entries and their schemas as JSON")
    c.add_argument("--bus", default="can0", help="bus name: the raw stream's name and part of every uuid")
    c.add_argument("--device", default="logb", help="device identity the stream uuids derive from")
    c.add_argument("--fd", action="store_true", help="use the CAN FD (64-byte) raw bus layout")
    c.add_argument("--strict", action="store_true", help="exit 1 if anything could not be expressed")
    s = sub.add_parser("show", help="list an LBCF config's entries",
                       description="List the entries of an LBCF device config.")
    s.add_argument("config", help="an .lbcf file")
    s.add_argument("--json", action="store_true")


def _entry_json(i, entry, schema, extra=None):
    d = {"index": i, "stream_id": i + 1, "kind": entry.kind, "match_id": f"0x{entry.match_id:08X}",
         "match_mask": f"0x{entry.match_mask:08X}", "payload_len": entry.payload_len,
         "record_size": entry.record_size, "name": schema.name, "uuid": schema.uuid.hex()}
    if extra:
        d.update(extra)
    d["schema"] = schema_json(schema)
    return d


def run(args, out):
    if args.action == "show":
        return _show(args, out)
    from ..can.config import config_entries, write_config
    from ..can.dbc import compile_dbc

    try:
        compiled = compile_dbc(args.dbc, bus=args.bus, device=args.device, fd=True if args.fd else None)
    except (OSError, ImportError):
        raise  # an unusable path, or cantools missing: main.py says which
    except Exception as exc:  # cantools' parse errors have no common base class
        raise UnreadableInputError(f"{args.dbc}: cannot parse: {exc}") from None
    for name, reason in compiled.problems:
        print(f"logb dbc: not compiled: {name}: {reason}", file=sys.stderr)
    for name, note in compiled.notes:
        print(f"logb dbc: note: {name}: {note}", file=sys.stderr)
    entries = config_entries(compiled)
    if args.output:
        with output(args.output, [args.dbc]) as tmp:
            size = write_config(compiled, tmp)
        if not args.json:
            print(f"wrote {args.output}: {len(entries)} entries, {size} bytes", file=out)
    if args.json:
        items = [_entry_json(0, entries[0], entries[0].schema, {"message": None})]
        for i, e in enumerate(compiled.entries, 1):
            items.append(_entry_json(i, entries[i], e.schema, {
                "message": e.message, "frame_id": f"0x{e.frame_id:X}", "extended": e.extended,
                "j1939": e.j1939, "mux": e.mux.label if e.mux else None,
                "select": e.mux.select_spec() if e.mux else None, "signals": list(e.signals)}))
        doc = {"dbc": args.dbc, "bus": compiled.bus, "fd": compiled.fd, "entries": items,
               "problems": [{"name": n, "reason": r} for n, r in compiled.problems],
               "notes": [{"name": n, "note": r} for n, r in compiled.notes]}
        out.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    elif not args.output:
        _table(out, entries, [entries[0].schema] + [e.schema for e in compiled.entries])
        print(f"{len(compiled.entries)} per-message streams, {sum(len(e.signals) for e in compiled.entries)} "
              f"signal fields; {len(compiled.problems)} not compiled", file=out)
    return EXIT_DAMAGED if (args.strict and compiled.problems) else EXIT_OK


def _table(out, entries, schemas):
    print(f"{'id':>3} {'kind':>4} {'match_id':>10} {'mask':>10} {'len':>3} {'rec':>4}  name (fields)", file=out)
    for i, (e, s) in enumerate(zip(entries, schemas)):
        print(f"{i + 1:>3} {e.kind:>4} 0x{e.match_id:08X} 0x{e.match_mask:08X} {e.payload_len:>3} "
              f"{e.record_size:>4}  {s.name} ({len(s.fields)})", file=out)


def _show(args, out):
    from ..can.config import read_config

    try:
        entries = read_config(args.config)
        schemas = [e.schema for e in entries]
    except LogbError as exc:  # a malformed config (UnreadableInputError) or schema in it
        raise UnreadableInputError(f"{args.config}: {exc}") from None
    if args.json:
        items = [_entry_json(i, e, s, {"select": s.meta_dict().get(layout.SELECT_KEY)})
                 for i, (e, s) in enumerate(zip(entries, schemas))]
        out.write(json.dumps({"config": args.config, "entries": items}, indent=1, ensure_ascii=False) + "\n")
    else:
        _table(out, entries, schemas)
    return EXIT_OK
