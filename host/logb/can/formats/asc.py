"""Vector ASC, through python-can's ASC reader and writer.

Stamps are µs ticks relative to the measurement start; a start date makes the
trace dated (local time without a zone: read in this machine's time zone)."""

import datetime

from .pycan import EPOCH_MIN_S, Collector, LineTap, channel_int, length_dlc_code, messages, resolution_warning, \
    start_for, ticks
from .trace import Trace

NAME = "asc"
EXTENSIONS = (".asc",)
REQUIRES = "can"  # python-can
LOSSES = """\
- ASC: python-can reads every CANFD line as CAN FD and every CANFD line without data as a
  remote frame; here the line's Flags column decides (EDL 0x1000, RTR 0x10, as in BLF) for
  lines of up to 8 bytes. The start date is local time without a zone (python-can's choice:
  this machine's zone). python-can's writer restarts the measurement at the first frame,
  writes the header's milliseconds unpadded (17:59:00.020 as 17:59:00.20, which every
  reader takes as .200) and ErrorFrame lines without FD flag or direction; here the
  source's measurement start is kept, the header date is written here (milliseconds
  zero-padded, English names whatever the locale) and CAN FD error frames are written as
  `CANFD ... ErrorFrame` lines. Classic error
  frames have no direction in ASC. Error details (ECC, position, ...), statistics, J1939TP
  and other events are not frames; python-can skips them."""
ASC_EDL, ASC_BRS, ASC_ESI, ASC_RTR = 0x1000, 0x2000, 0x4000, 0x10  # CANFD line flags (as BLF's FD64)
dlc_code = length_dlc_code  # classic frames: python-can's dlc2len(code)
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def header_date(dt):
    """An ASC header date, `Wed Jun 05 17:59:00.020 2024`. Written here, not by python-can
    (4.x formats the milliseconds unpadded, `.20`, read back as 200 ms), in English: readers
    (python-can's, CANoe's) match English month names, and strftime's %a/%b follow the locale."""
    return (f"{_DAYS[dt.weekday()]} {_MONTHS[dt.month - 1]} {dt.day:02d} "
            f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{dt.microsecond // 1000:03d} {dt.year}")


def _canfd_flags(line):
    """The Flags column of an ASC `CANFD` frame line, or None (error frames, short lines)."""
    tok = line.split()
    if len(tok) < 10 or tok[1].upper() != "CANFD" or tok[4].lower() == "errorframe":
        return None
    i = 5 if tok[5].isdigit() else 6  # an optional symbolic name after the id (python-can's rule)
    try:
        j = i + 4 + int(tok[i + 3]) + 2  # brs esi dlc length, data, duration, bit count, flags
        return int(tok[j], 16) if j < len(tok) else None
    except ValueError:
        return None


def read(path):
    from can.io.asc import ASCReader

    col, exp, notes = Collector(), -6, []
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        tap = LineTap(fh)
        reader = ASCReader(tap, relative_timestamp=False)
        for msg in tap.messages(reader, notes):
            flags = _canfd_flags(tap.line) if msg.is_fd and not msg.is_error_frame else None
            if flags is not None and len(msg.data) <= 8:
                # python-can marks every CANFD line FD and every empty one remote; the Flags
                # column says which frames are CAN FD (EDL) and which remote (RTR). Lines with
                # more than 8 bytes are CAN FD whatever the column says.
                msg.is_fd = bool(flags & ASC_EDL)
                if not msg.is_fd:
                    msg.bitrate_switch = msg.error_state_indicator = False
                msg.is_remote_frame = not msg.data and not msg.is_fd and bool(flags & ASC_RTR)
            col.add(msg.channel, ticks(msg.timestamp, exp), msg, dlc_code(msg))
    start_s = reader.start_time or 0.0
    dated = start_s >= EPOCH_MIN_S
    trace = Trace(col.buses(), exp, dated, ticks(start_s, exp) if dated else None, NAME,
                  left_out=notes + col.notes())
    trace.notes.append("ASC dates are local time; read in this machine's time zone")
    return trace


def write(trace, out):
    from can.io.asc import ASCWriter

    per_ms = 10 ** (-3 - trace.axis_exp)
    start = start_for(trace, per_ms)
    start_s = start * 10.0 ** trace.axis_exp

    class Writer(ASCWriter):
        def _format_header_datetime(self, dt):  # both header lines: the source's start, not now
            return header_date(datetime.datetime.fromtimestamp(start_s))

        def log_event(self, message, timestamp=None):
            # stamps arrive relative to the measurement start, which is the source's start
            if not self.header_written:
                self.header_written = True
                self.started = 0.0
                self.file.write(f"Begin Triggerblock {self._format_header_datetime(None)}\n")
                self.file.write(self.FORMAT_EVENT.format(timestamp=0.0, message="Start of measurement"))
            self.file.write(self.FORMAT_EVENT.format(timestamp=timestamp or 0.0, message=message))

        def on_message_received(self, msg):
            if msg.is_error_frame and msg.is_fd:  # keep FD flag and direction of CAN FD error frames
                ch = channel_int(msg.channel) + 1
                return self.log_event(f"CANFD {ch:>3} {'Rx' if msg.is_rx else 'Tx':<4} ErrorFrame", msg.timestamp)
            return super().on_message_received(msg)

    w = Writer(str(out))
    try:
        for _tick, msg in messages(trace, start=start):
            msg.channel = channel_int(msg.channel)
            w.on_message_received(msg)
    finally:
        w.stop()
    return resolution_warning(trace, -6, "ASC")
