"""PEAK TRC, through python-can's TRC reader and writer.

Stamps are µs ticks; a start date makes the trace dated. Buses are 0-based here
as in every other format (TRC counts them from 1)."""

import datetime
import os

from .. import layout
from .pycan import EPOCH_MIN_S, Collector, channel_int, messages, resolution_warning, start_for, ticks
from .trace import Trace

NAME = "trc"
EXTENSIONS = (".trc",)
REQUIRES = "can"  # python-can
LOSSES = """\
- TRC: python-can's reader numbers buses from 1 while its writer adds 1 again; here buses are
  0-based in Logb like every other format. Its writer refuses remote and CAN FD frames; here
  they are written (types RR, FD/FB/FE/BI). Error frames cannot be written so that python-can
  reads them back; TRC export drops them with a warning. TRC 1.x stamps have 0.1 ms steps."""
_FD_KINDS = {(False, False): "FD", (True, False): "FB", (True, True): "FE", (False, True): "BI"}  # (BRS, ESI)


def dlc_code(msg):
    """The wire DLC code of a Message: python-can's TRC reader puts the code in `dlc` for
    every frame kind."""
    return int(msg.dlc or 0)


def read(path):
    from can.io.trc import TRCReader

    col, exp = Collector(), -6
    reader = TRCReader(str(path))
    for msg in reader:
        ch = msg.channel - 1 if isinstance(msg.channel, int) else msg.channel  # TRC buses count from 1
        col.add(ch, ticks(msg.timestamp, exp), msg, dlc_code(msg))
    start = reader.start_time  # an exact-µs datetime (UTC) or None
    dated = start is not None and start.timestamp() >= EPOCH_MIN_S
    start_us = (start - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // \
        datetime.timedelta(microseconds=1) if dated else None
    return Trace(col.buses(), exp, dated, start_us, NAME, left_out=col.notes())


def write(trace, out):
    from can.io.trc import TRCWriter

    start = start_for(trace, 1 if trace.axis_exp >= -6 else 10 ** (-6 - trace.axis_exp))
    start_s = start * 10.0 ** trace.axis_exp
    dropped = [0]

    class Writer(TRCWriter):
        def _format_message_by_format(self, msg, channel):
            line = super()._format_message_by_format(msg, channel)
            kind = "DT"
            if msg.is_remote_frame:
                kind = "RR"
            elif msg.is_fd:
                kind = _FD_KINDS[(bool(msg.bitrate_switch), bool(msg.error_state_indicator))]
            return line.replace(" DT ", f" {kind} ", 1)

        def on_message_received(self, msg):
            if msg.is_error_frame:
                dropped[0] += 1
                return
            # python-can refuses remote and FD frames; its formatting handles them once typed
            channel = channel_int(msg.channel) + 1
            self.msgnr += 1
            self.log_event(self._format_message(msg, channel), msg.timestamp)

    w = Writer(str(out))
    # The header names the file: its own name, not the folder it was written in
    # (the CLI writes through a private temporary folder; a path would go stale anyway).
    w.filepath = os.path.basename(str(out))
    try:
        w.first_timestamp = 0.0
        w.write_header(start_s if trace.dated else 0.0)
        for _tick, msg in messages(trace, start=start):
            if msg.is_fd:
                msg.dlc = layout.len_to_dlc(msg.dlc)  # TRC's L column is the DLC code
            w.on_message_received(msg)
    finally:
        w.stop()
    warnings = resolution_warning(trace, -6, "TRC")
    if dropped[0]:
        warnings.append(f"TRC export dropped {dropped[0]} error frames (python-can cannot read them back)")
    return warnings
