"""`logb tail` over a pseudo-terminal cable while the logger records: records
decoded as their frames arrive, printed in time order, and through a reboot of
the logger (a new writer session, shown as one) — under CPython and on the
simulated board (MicroPython in Node.js) with a DBC; what it shows of frames
shorter than their message; its reordering window, time bases, --id, and J1939
transfers split across DATA frames."""

import dataclasses
import io
import json
import pathlib
import signal
import subprocess
import sys
import threading

import numpy as np

import pytest

import logb
from logb.can.dbc import compile_dbc
from logb.can.record import CanRecorder
from logb.batch import Batch
from logb.cli.tail import Printer

sys.path.insert(0, str(pathlib.Path(__file__).parent / "serial"))
import rig  # noqa: E402

pytestmark = pytest.mark.single_backend


def tail(port, *args, duration):
    # Ctrl-C must reach it even when this test runs with SIGINT ignored (a background job of a
    # non-interactive shell, as in CI): Python installs its handler only over the default action.
    return subprocess.Popen([sys.executable, "-m", "logb.cli.main", "tail", "--json", "--port", str(port),
                             "--duration", str(duration), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


class Watch:
    """The JSON lines of a running `logb tail --json` (and its stderr), read as
    they come, so a test waits on what tail has shown rather than on the clock."""

    STOP_S = 120  # Ctrl-C to exit: tail says BYE, which the logger answers once its TAIL stream ends

    def __init__(self, p):
        self.p, self.lines, self.err = p, [], []
        self._threads = [threading.Thread(target=lambda: self.lines.extend(json.loads(x) for x in p.stdout),
                                          daemon=True),
                         threading.Thread(target=lambda: self.err.extend(p.stderr), daemon=True)]
        for t in self._threads:
            t.start()

    def wait(self, done, timeout=60):
        """True once done(lines) holds; False when tail exits or the timeout passes first."""
        return rig.wait_until(lambda: done(list(self.lines)) or self.p.poll() is not None, timeout, 0.1) \
            and done(list(self.lines))

    def stop(self):
        """Ctrl-C, as a user would: (exit status, lines, stderr)."""
        self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(self.STOP_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError(f"tail did not stop within {self.STOP_S} s of Ctrl-C:\n{''.join(self.err)}") from None
        for t in self._threads:
            t.join(30)
        return self.p.returncode, self.lines, "".join(self.err)


def records_shown(lines):
    return sum("session" not in x for x in lines)


def after_second_session(lines):
    k = [i for i, x in enumerate(lines) if "session" in x]
    return lines[k[1] + 1:] if len(k) >= 2 else []


def test_tail_shows_the_frames_the_logger_records(tmp_path):
    dev = tmp_path / "sd"
    dev.mkdir()
    with rig.Cable(tmp_path) as cable:
        d = rig.cpython_device(cable.device, dev, record=rig.LANCER, name="rec-0001.logb", speed=12, limit=40000)
        try:
            assert rig.wait_until(lambda: (dev / "rec-0001.logb").stat().st_size > 30000), "nothing recorded"
            w = Watch(tail(cable.host, duration=120))
            assert w.wait(lambda ls: records_shown(ls) > 100 and sum(x.get("stream") == "coolant" for x in ls) > 5), \
                "tail showed no more than 100 records, or no sensor records"
            rc, lines, err = w.stop()
            d.wait_for("RECORDED", 60)
        finally:
            d.kill()
    assert rc == 0, err
    sessions = [x for x in lines if "session" in x]
    recs = [x for x in lines if "id" in x]
    assert len(sessions) == 1 and sessions[0]["device"] == "cpython-logger" and len(recs) > 100
    f = logb.LogbFile(dev / "rec-0001.logb")
    c = f.stream("can0").columns()
    known = {(round(float(t), 6), int(i), bytes(b).hex()) for t, i, b in zip(c.seconds(), c.raw["id"], c.raw["data"])}
    for r in recs:  # every record shown is one the file holds, time, id and payload
        key = (round(r["t"], 6), r["id"], r["data"].ljust(16, "0"))
        assert key in known, r
    # live: it started near the end of what was recorded, not at the beginning
    assert recs[0]["t"] > float(c.seconds()[0]) + 1.0
    # the sensor's DATA frames (sealed every 200 ms) arrive after raw frames newer than their records,
    # yet every row is printed in time order; undated: relative times from the first row shown
    rows = [x for x in lines if "t" in x]
    assert [r["t"] for r in rows] == sorted(r["t"] for r in rows)
    assert {"coolant", "can0"} <= {r["stream"] for r in rows}
    assert rows[0]["time_s"] == 0 and all("time_utc" not in r for r in rows)
    sensor = f.stream("coolant").columns().seconds()
    assert sensor[-1] - sensor[0] > 1  # the sensor recorded long enough for its frames to lag the raw ones


def tail_through_reboot(cable, boot, recorded, tail_args, enough):
    """Start the logger (`boot(0)`), tail it once `recorded()` holds, cut its power
    after tail has shown records, boot it again (`boot(1)`) and stop tail once
    enough(lines after the second session) holds: (exit status, lines, stderr)."""
    devices = [boot(0)]
    try:
        assert rig.wait_until(recorded), "the logger recorded nothing"
        w = Watch(tail(cable.host, *tail_args, duration=300))
        assert w.wait(lambda ls: records_shown(ls) >= 20), "tail showed no records before the reboot"
        devices[0].kill()  # power cut: the logger reboots, a new writer session
        devices.append(boot(1))
        shown = w.wait(lambda ls: enough(after_second_session(ls)), 90)
        rc, lines, err = w.stop()
        assert shown, f"tail did not show enough of the second session: {lines[-5:]}\n{err}"
        return rc, lines, err
    finally:
        for d in devices:
            d.kill()


def test_tail_survives_a_reboot_cpython(tmp_path):
    dev = tmp_path / "sd"
    dev.mkdir()
    with rig.Cable(tmp_path) as cable:
        # Both recordings outlast any reconnect delay on a loaded machine (the trace is 55 s).
        rc, lines, err = tail_through_reboot(
            cable, lambda n: rig.cpython_device(cable.device, dev, record=rig.LANCER, name=f"rec-000{n + 1}.logb",
                                                speed=2 - n),
            lambda: (dev / "rec-0001.logb").stat().st_size > 20000, (), lambda ls: records_shown(ls) >= 50)
    assert rc == 0, err
    order = ["session:" + x["session"] if "session" in x else "rec" for x in lines]
    sessions = [x for x in order if x.startswith("session:")]
    assert len(sessions) == 2 and sessions[0] != sessions[1], err
    first, second = order.index(sessions[0]), order.index(sessions[1])
    assert "rec" in order[first:second] and "rec" in order[second:]  # records from both sessions
    assert "restarted" in err and "reconnect" in err


def test_tail_with_a_dbc_through_a_board_reboot(tmp_path):
    """The simulated board records the durango trace with fca_giorgio.dbc's
    config; tail decodes signals live; the board is killed and boots again
    (the same SD file, a new session)."""
    sd = tmp_path / "sd"
    sd.mkdir()
    def enough(ls):
        got = {x.get("stream") for x in ls}
        return {"NEW_MSG_11C", "coolant", "can0"} <= got and got & {"ABS_6", "NEW_MSG_118", "EPS_3"}

    with rig.Cable(tmp_path) as cable:
        rc, lines, err = tail_through_reboot(
            cable, lambda n: rig.micropython_device(cable.device, sd / "rec.logb", speed=2, limit=70000, deadline=90,
                                                    settings={"session": "5e" * 16} if n else None),
            lambda: (sd / "rec.logb").stat().st_size > 50000, ("--dbc", rig.GIORGIO), enough)
    assert rc == 0, err
    sessions = [x["session"] for x in lines if "session" in x]
    assert len(sessions) == 2 and sessions[1] == "5e" * 16, err
    signals = [x for x in lines if "signals" in x]
    streams = {x["stream"] for x in signals}
    assert {"NEW_MSG_11C", "coolant"} <= streams  # a per-message stream, the sensor
    assert streams & {"ABS_6", "NEW_MSG_118", "EPS_3"}  # raw frames decoded with the DBC
    speeds = [x["signals"]["VEHICLE_SPEED"] for x in signals if x["stream"] == "NEW_MSG_11C"]
    assert speeds and all(0 <= v < 1 for v in speeds)
    assert any("id" in x and "signals" not in x for x in lines)  # frames no message matches: raw


TAIL_DBC = '''VERSION ""

NS_ :

BS_:

BU_: ECU

BO_ 256 Engine: 8 ECU
 SG_ Speed : 7|16@0+ (0.25,0) [0|16383.75] "rpm" ECU
 SG_ Gear : 24|4@1+ (1,0) [0|15] "" ECU

VAL_ 256 Gear 0 "P" 1 "R" 2 "N" 3 "D" ;
'''


def test_tail_leaves_out_what_a_short_frame_lacked(tmp_path):
    """Missing is missing (docs/SPEC.md §13.2), live too: a signal past a short frame's
    data is left out of the text line and null in --json, from a per-message stream (its
    `missing` field), from raw frames decoded with --dbc (their DLC), and a per-message
    schema from before `missing` holds whole messages."""
    compiled = compile_dbc(TAIL_DBC)
    path = tmp_path / "short.logb"
    with logb.Writer(str(path)) as w:
        with CanRecorder(w, compiled) as rec:
            rec.add([1000, 2000], [0x100, 0x100], None, [2, 8], [b"\x12\x34", b"\x12\x34\x00\x03\0\0\0\0"])
    f = logb.LogbFile(str(path))

    def shown(stream, as_json, compiled=None, drop_missing=False):
        out = io.StringIO()
        printer = Printer(out, compiled, as_json=as_json)
        s = f.stream(stream)
        for _, batch in s.batches():
            schema = s.schema
            if drop_missing:  # as written before the field existed
                schema = dataclasses.replace(schema, fields=tuple(x for x in schema.fields if x.name != "missing"))
                del batch.raw["missing"]
            printer.records_of(schema, batch)
        printer.close()
        return [json.loads(x) if as_json else x for x in out.getvalue().splitlines()]

    for stream, dbc in (("Engine", None), ("can0", compiled)):
        short, whole = shown(stream, True, dbc)
        assert short["signals"] == {"Speed": 0x1234 * 0.25, "Gear": None}
        assert whole["signals"] == {"Speed": 0x1234 * 0.25, "Gear": "D"}
        short, whole = shown(stream, False, dbc)
        assert "Speed=1165 rpm" in short and "Gear" not in short
        assert "Speed=1165 rpm" in whole and "Gear=D" in whole
    short, whole = shown("Engine", True, drop_missing=True)
    assert short["signals"] == {"Speed": 0x1234 * 0.25, "Gear": "P"}  # the zero padding, as recorded


# ---------------------------------------------------------------- time order, --time, --id, J1939 across DATA frames

def recorded_batches(compiled, t_us, ids, data, dlc=None):
    """{stream name: (schema, its whole Batch)} of frames recorded with `compiled` (mirror)."""
    buf = io.BytesIO()
    with logb.Writer(buf) as w:
        with CanRecorder(w, compiled) as rec:
            rec.add(t_us, ids, None, dlc if dlc is not None else [len(d) for d in data], data)
    f = logb.LogbFile(buf.getvalue())
    out = {}
    for s in f.streams.values():
        parts = [b for _, b in s.batches()]
        if parts:
            out[s.schema.name] = (s.schema, join(parts))
    return out


def join(parts):
    return Batch(sum(p.count for p in parts), 0, {k: np.concatenate([p.raw[k] for p in parts]) for k in parts[0].raw},
                 np.concatenate([p.axis for p in parts]))


def chunk(batch, lo, hi):
    return Batch(hi - lo, batch.run_id, {k: v[lo:hi] for k, v in batch.raw.items()}, batch.axis[lo:hi])


def interleaved():
    """Events as a logger sends them: the raw bus stream's DATA frames every 10 frames, the
    Engine stream's every 20 of its (later: a slower stream's frame is sealed later)."""
    n = 200
    t = np.arange(n) * 5000  # 5 ms apart, every other frame an Engine frame
    ids = np.where(np.arange(n) % 2, 0x100, 0x7E8)
    data = [bytes([i % 256, 0, 0, 3, 0, 0, 0, 0]) for i in range(n)]
    got = recorded_batches(compile_dbc(TAIL_DBC), t, ids, data)
    (raw_s, raw), (msg_s, msg) = got["can0"], got["Engine"]
    events = []
    for k in range(0, n, 10):
        events.append(("records", raw_s, chunk(raw, k, k + 10)))
        if k % 40 == 30:  # 20 Engine records, the first 200 ms older than the raw frames before them
            j = (k + 10) // 2
            events.append(("records", msg_s, chunk(msg, j - 20, j)))
    return events


def run_printer(events, **kw):
    out = io.StringIO()
    p = Printer(out, as_json=True, **kw)
    held = []
    for ev in events:
        p.event(ev)
        held.append(len(p.order))
    p.close()
    return [json.loads(x) for x in out.getvalue().splitlines()], held


def test_tail_prints_interleaved_streams_in_time_order():
    events = interleaved()
    rows, held = run_printer(events, order_s=0.5)
    times = [r["t"] for r in rows]
    assert len(rows) == 300 and {r["stream"] for r in rows} == {"can0", "Engine"}
    assert times == sorted(times)
    assert max(held) <= 150 + 20  # 0.5 s of rows (raw every 5 ms, Engine every 10) and one DATA frame's
    # as they arrive (--order-window 0): out of order, as the logger sent them
    times = [r["t"] for r in run_printer(events, order_s=0)[0]]
    assert times != sorted(times) and sorted(times) == sorted(r["t"] for r in rows)
    # the row bound holds whatever the window; what it lets out early may be out of order, nothing is lost
    rows, held = run_printer(events, order_s=100, order_rows=25)
    assert max(held) <= 25 and len(rows) == 300


def test_tail_time_bases_and_id_filter():
    """relative from the first row shown, device on the logger's axis, utc once an anchor
    dates the session (rows still waiting are dated by it), --id over frames and messages."""
    from logb.cli.common import parse_id_filter
    from logb.timebase import Anchor

    events = interleaved()
    session = ("session", "ab" * 16, {"logb.time_base": "monotonic", "logb.device": "d"})
    rows = run_printer([session] + events)[0]
    assert rows[1]["time_s"] == 0 and rows[-1]["time_s"] == pytest.approx(0.995) and "time_utc" not in rows[1]
    rows = run_printer([session] + events, basis="device")[0]
    assert "time_s" not in rows[1] and "time_utc" not in rows[1]
    anchor = ("anchor", Anchor(axis_ns=0, wall_ns=1_742_339_205_000_000_000), None)
    rows = run_printer([session] + events[:3] + [anchor] + events[3:])[0]
    assert rows[1]["time_utc"] == "2025-03-18T23:06:45.000000Z" and rows[-1]["time_utc"].endswith("45.995000Z")
    unix = ("session", "cd" * 16, {"logb.time_base": "unix"})
    assert run_printer([unix] + events)[0][1]["time_utc"].startswith("1970-01-01T00:00:00")
    notes = []
    rows = run_printer([session] + events, basis="utc", say=notes.append)[0]
    assert "time_s" in rows[1] and len(notes) == 1 and "not dated" in notes[0]  # said once
    rows = run_printer(events, ids=parse_id_filter("7E8"))[0]
    assert {(r["stream"], r["id"]) for r in rows} == {("can0", 0x7E8)} and len(rows) == 100
    rows = run_printer(events, ids=parse_id_filter("0x100"))[0]
    assert {(r["stream"], r.get("id")) for r in rows} == {("Engine", None), ("can0", 0x100)}  # mirror: both
    assert len(rows) == 200


def test_tail_joins_a_j1939_transfer_split_across_data_frames():
    """A BAM whose packets fall in two DATA frames decodes, once, at its last TP.DT."""
    pytest.importorskip("cantools")
    from test_can_transport_decode import PAYLOADS, long_dbc, pad64, traffic

    compiled = compile_dbc(long_dbc())
    t, ids, flags, dlc, data = traffic().columns()
    buf = io.BytesIO()
    with logb.Writer(buf, time_base="relative") as w:
        with CanRecorder(w, compiled) as rec:
            rec.add(t, ids, flags, dlc, pad64(data))
    f = logb.LogbFile(buf.getvalue())
    s = f.stream("can0")
    whole = join([b for _, b in s.batches()])
    first_dt = int(np.flatnonzero((whole.raw["id"] >> 16 & 0xFF) == 0xEB)[0])
    for cut in (first_dt + 1, len(whole.axis) // 2):  # inside the first BAM; in the middle of the traffic
        out = io.StringIO()
        p = Printer(out, compiled, as_json=True, messages=["Message2"])
        p.event(("records", s.schema, chunk(whole, 0, cut)))
        p.event(("records", s.schema, chunk(whole, cut, whole.count)))
        p.close()
        rows = [json.loads(x) for x in out.getvalue().splitlines()]
        bams = [r for r in rows if r.get("transport") == "BAM"]
        assert [round(r["t"], 6) for r in bams] == [0.18, 0.19], cut
        want = [compiled.database.get_message_by_name("Message2").decode(PAYLOADS[sa]) for sa in (2, 3)]
        assert [r["signals"] for r in bams] == want
        assert {r["id"] for r in bams} == {0x19F01002, 0x19F01003}  # PDU2: the PGN id of each source


def test_live_decoder_passes_anchors_on():
    """A logger's GPS fix (an anchor META) reaches tail as an ("anchor", …) event,
    so a session recorded on the monotonic clock is shown in UTC live; a
    malformed one is a "rejected" event, not a crash."""
    sys.path.insert(0, str(pathlib.Path(__file__).parent / "firmware"))
    import fwload
    from logb.frames import Meta
    from logb.framing import encode_frame
    from logb.serial.live import LiveDecoder
    from logb.tables import FrameType

    fw = fwload.load()
    sink = io.BytesIO()
    w = fw.Writer(sink, session="ab" * 16, ticks=lambda: 1000)
    s = w.add_sensor("v", [("x", "B", "")])
    s.append(500, 1)
    w.anchor_utc(fw.civil_days(2025, 3, 18), 23 * 3600 + 6 * 60 + 50, 250_000_000, t=1000)
    w.close()
    events = LiveDecoder().feed(sink.getvalue())
    anchors = [e[1] for e in events if e[0] == "anchor"]
    assert len(anchors) == 1
    assert anchors[0].axis_ns == 1_000_000 and anchors[0].wall_ns == 1_742_339_210_250_000_000
    malformed = encode_frame(FrameType.META, Meta(pairs=(("logb.anchor.axis_ns", "0"),
                                                         ("logb.anchor.wall_ns", "12x"))).encode())
    events = LiveDecoder().feed(sink.getvalue() + malformed)
    assert [e[0] for e in events].count("anchor") == 1 and events[-1][0] == "rejected"
