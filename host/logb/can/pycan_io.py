"""python-can's view of Logb files: `.logb` for can.LogReader and can.Logger (and so
for `python -m can.logconvert`, `can.player`, `can.logger`), registered in
host/pyproject.toml under the entry points `can.io.message_reader` and
`can.io.message_writer`, which python-can reads.

    for msg in can.LogReader("rec.logb"):          # every frame of every bus, in time order
        ...
    with can.Logger("out.logb") as log:            # LogbWriter: written like a logger
        log(msg)

Reading gives what `logb export` gives: every frame of each bus whatever the routing
(logb.can.bus), timestamps in Unix seconds when the file is dated (unix or anchored
sessions), else the session's own seconds, channel = the bus name. Writing goes
through LiveRecorder (logb.can.pycan_record): each DATA frame reaches the OS as it
is sealed, so a killed writer leaves a valid file."""

from can.io.generic import MessageReader, SizedMessageWriter

from ..reader import LogbFile
from .formats.logbfile import read_logb
from .formats.pycan import messages
from .pycan_record import LiveRecorder


class LogbReader(MessageReader):
    """Iterate the CAN frames of a Logb file as python-can Messages.

    file: a path or a binary file object. buses: only these buses (bus or raw bus
    stream names, or uuids), default all. recover: also read a file whose start
    is missing (from its first SYNC)."""

    def __init__(self, file, buses=None, recover=False, **kwargs):
        self.file = LogbFile(file, recover=bool(recover))
        self.buses = [buses] if isinstance(buses, str) else buses

    def __iter__(self):
        trace = read_logb(self.file, self.buses)
        for _tick, msg in messages(trace):
            yield msg

    def stop(self):
        self.file.close()


class LogbWriter(SizedMessageWriter):
    """Write python-can Messages as a Logb file, the way a logger writes it.

    file: a path or a binary file object. dbc: a DBC path (per-message streams,
    the DBC attached). append: add a writer session to an existing file. fd:
    the 64-byte raw layout (default; False: 8 bytes, wider payloads counted in
    logb.lost.invalid). durability: "frame" (default), "segment" or "close".
    flush_s: the longest a received frame waits to be sealed (a thread seals a
    quiet bus). time_base: "auto" (default: Unix time when the stamps are, else
    relative), "unix" or "monotonic" (stamps anchored to the host clock).
    Options python-can passes for other writers are ignored."""

    def __init__(self, file, dbc=None, append=False, fd=True, durability="frame", flush_s=1.0,
                 time_base="auto", **kwargs):
        self.recorder = LiveRecorder(file, dbc=dbc, fd=fd, time_base=time_base, durability=durability,
                                     flush_s=float(flush_s), append=bool(append), ticker=True,
                                     device="python-can")

    def on_message_received(self, msg):
        self.recorder.add(msg)

    def file_size(self):
        return self.recorder.file_size()

    def stop(self):
        self.recorder.close()
