"""candump `-L` .log (SocketCAN's can-utils), through python-can's canutils reader and writer.

Stamps are µs ticks; epoch stamps make the trace dated."""

from .. import layout
from .pycan import EPOCH_MIN_S, Collector, LineTap, length_dlc_code, messages, resolution_warning, ticks
from .trace import Trace

NAME = "candump"
EXTENSIONS = (".log",)
REQUIRES = "can"  # python-can
LOSSES = """\
- candump: python-can drops the channel, class bits and data of error frames and reads error
  frames without the bus-error bit as extended data frames; here the line itself supplies
  them. Its writer drops a remote frame's DLC and an error frame's class bits and data; here
  those two frame kinds are written by this module. Classic frames with DLC > 8 (the `_X`
  suffix) are not understood by python-can (read as 8 bytes)."""
CAN_ERR_FLAG = 0x20000000  # SocketCAN: the id of an error frame
dlc_code = length_dlc_code


def read(path):
    from can.io.canutils import CanutilsLogReader

    col, dated, exp, notes = Collector(), True, -6, []
    with open(path, "r", encoding="ascii", errors="replace") as fh:
        tap = LineTap(fh)
        for msg in tap.messages(CanutilsLogReader(tap), notes):
            parts = tap.line.split()
            frame = parts[2] if len(parts) >= 3 else ""
            id_text, _, payload = frame.partition("#")
            channel = msg.channel if msg.channel is not None else (parts[1] if len(parts) >= 2 else None)
            raw_id = int(id_text, 16) if id_text else 0
            if len(id_text) == 8 and raw_id & CAN_ERR_FLAG:  # a SocketCAN error frame
                msg.is_error_frame, msg.is_remote_frame, msg.is_fd = True, False, False
                msg.arbitration_id = raw_id & 0x1FFFFFFF
                msg.data = bytearray.fromhex(payload[:16]) if payload else bytearray()
                msg.dlc = len(msg.data)
                msg.is_rx = True
            dated &= msg.timestamp >= EPOCH_MIN_S
            col.add(channel, ticks(msg.timestamp, exp), msg, dlc_code(msg))
    return Trace(col.buses(), exp, dated, None, NAME, left_out=notes + col.notes())


def write(trace, out):
    from can.io.canutils import CanutilsLogWriter

    class Writer(CanutilsLogWriter):
        def on_message_received(self, msg):
            if not (msg.is_error_frame or (msg.is_remote_frame and msg.dlc)):
                return super().on_message_received(msg)
            line = f"({msg.timestamp:f}) {msg.channel}"
            if msg.is_error_frame:  # python-can would write fixed class bits and no data
                line += f" {CAN_ERR_FLAG | msg.arbitration_id:08X}#{bytes(msg.data).hex().upper()}\n"
            else:  # python-can would drop the DLC
                ident = f"{msg.arbitration_id:08X}" if msg.is_extended_id else f"{msg.arbitration_id:03X}"
                code = layout.len_to_dlc(msg.dlc) if msg.is_fd else msg.dlc
                line += f" {ident}#R{code}{' R' if msg.is_rx else ' T'}\n"
            self.file.write(line)

    scale = 10 ** -trace.axis_exp
    w = Writer(str(out))
    try:
        for tick, msg in messages(trace):
            msg.timestamp = tick / scale  # int / int: the float nearest the exact stamp
            w.on_message_received(msg)
    finally:
        w.stop()
    return resolution_warning(trace, -6, "candump")
