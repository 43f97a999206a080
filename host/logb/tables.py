"""The format's enumerations, defined once. docs/SPEC.md is checked against these."""

from enum import IntEnum


class FrameType(IntEnum):
    SYNC = 0x01
    SCHEMA = 0x10
    META = 0x11
    ATTACH = 0x12
    RUN = 0x13
    DATA = 0x20
    INDEX = 0x30
    END = 0x40
    SIGN = 0x50  # reserved: reported by name and skipped


# What a frame's stream_id means (SPEC §4.2): a file-scope frame's is ignored
# (reported when not 0), a stream-scope frame needs one, META is either.
FILE, STREAM, EITHER = "file", "stream", "either"
FRAME_SCOPE = {
    FrameType.SYNC: FILE,
    FrameType.SCHEMA: STREAM,
    FrameType.META: EITHER,
    FrameType.ATTACH: FILE,
    FrameType.RUN: FILE,
    FrameType.DATA: STREAM,
    FrameType.INDEX: FILE,
    FrameType.END: FILE,
    FrameType.SIGN: FILE,
}


class Codec(IntEnum):
    none = 0
    zstd = 1
    lz4 = 2
    deflate = 3


class Filter(IntEnum):
    none = 0
    transpose = 1


class DataType(IntEnum):
    uint = 0
    sint = 1
    float = 2
    bool = 3
    bytes = 4
    string = 5
    complex = 6


class ConversionType(IntEnum):
    identity = 0
    linear = 1
    rational = 2
    table = 3
    table_interp = 4
    value_to_text = 5
    range_to_text = 6


class AxisKind(IntEnum):
    time = 0
    frequency = 1
    angle = 2
    distance = 3
    index = 4
    other = 5


class AxisMode(IntEnum):
    implicit = 0
    explicit = 1
    implicit_log = 2


class ByteOrder(IntEnum):
    little = 0
    big = 1


FIELD_FLAG_VARIABLE = 0x01

# Reserved META keys (prefix "logb." is the format's; everything else is the user's).
# The loss counters are named: the device writer's copies are generated from these (tools/gen_wire.py).
LOST_CONTROLLER = "logb.lost.controller"  # frames the bus controller dropped (FIFO overrun)
LOST_BUFFER = "logb.lost.buffer"  # frames the writer dropped (its buffer was full)
LOST_INVALID = "logb.lost.invalid"  # frames no record could hold as given (SPEC §13.1)
LOST_SINK = "logb.lost.sink"  # bytes the writer produced that its medium did not take (failed or short writes)
META_KEYS = (
    "logb.time_base",
    "logb.session",
    "logb.clock_source",
    "logb.device",
    "logb.firmware",
    "logb.durability",
    "logb.anchor.axis_ns",
    "logb.anchor.wall_ns",
    "logb.anchor.source",
    "logb.anchor.uncertainty_ns",
    LOST_CONTROLLER,
    LOST_BUFFER,
    LOST_INVALID,
    LOST_SINK,
)

TIME_BASES = ("unix", "monotonic", "relative")
