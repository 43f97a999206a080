"""Logb writer for MicroPython: append-only recording of CAN frames and
sensor samples on flash or SD, crash-safe, allocating nothing per record.

    import logb
    w = logb.Writer(open("/sd/rec.logb", "wb"), device="van-7")
    w.load_config("/flash/vehicle.lbcf")     # from `logb dbc compile`
    while True:
        ... w.append_can(t, can_id, data, flags)   # per CAN frame
        w.poll()                                   # in the main loop

Also importable under CPython (tests, host tools), where it writes the same
bytes for the same inputs and clock readings. See firmware/README.md.
"""

from .writer import DUR_CLOSE, DUR_FRAME, DUR_SEGMENT, FIRMWARE, Stream, Writer, civil_days

__version__ = "0.1.0"
__all__ = ["Writer", "Stream", "civil_days", "DUR_FRAME", "DUR_SEGMENT", "DUR_CLOSE", "FIRMWARE", "__version__"]
