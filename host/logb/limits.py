"""The reader's resource limits (SPEC §8.3, "Reader limits"): what one input
may make the reader allocate or compute, checked from the DATA and ATTACH
headers before anything is decompressed or allocated.

Each limit is max(a constant, something the input's own size pays for), so an
input of 1 MB costs at most a few hundred MB and a CPU-second or two however
its headers lie, while a large file may hold frames as large as itself. A
frame beyond a limit is rejected with a reason that names it; the rest of the
file is read.
"""

import numpy as np

from . import fields as fieldsmod

# One frame's decoded records region (DATA) or attachment (ATTACH): raw_size.
FRAME_RAW_MIN = 32 << 20
# One DATA frame's decoded columns: records x (axis, run_id, session and every field's column).
FRAME_COLUMNS_MIN = 64 << 20
# Every DATA frame of one input together: raw_size plus columns.
FILE_DECODE_MIN = 1 << 30
FILE_DECODE_RATIO = 64
# Records of zero bytes (no fixed bits, no variable-length field) in one input:
# stored for free, they cost 8 bytes of axis each when decoded.
ZERO_SIZE_RECORDS_MIN = 1 << 16  # they carry nothing: a dump of them must stay cheap

# A column item that is a Python object (text, variable-length bytes): the pointer and the object.
_OBJECT_COST = 64
_PER_RECORD = 16  # axis, run_id, session


def frame_raw_limit(input_size):
    return max(FRAME_RAW_MIN, input_size)


def column_bytes(schema):
    """Bytes of decoded columns per record of `schema`, every field asked for."""
    total = _PER_RECORD
    for f in schema.fields:
        dtype, extra = fieldsmod.column_dtype(f)
        total += _OBJECT_COST if dtype.kind == "O" else dtype.itemsize * int(np.prod(extra, dtype=np.int64))
    return total


class Budget:
    """What the DATA frames of one input may cost, charged frame by frame as
    the scan accepts them (file order), so the same input always accepts the
    same frames."""

    def __init__(self, input_size):
        self.raw_limit = frame_raw_limit(input_size)
        self.columns_limit = max(FRAME_COLUMNS_MIN, input_size)
        self.file_left = max(FILE_DECODE_MIN, FILE_DECODE_RATIO * input_size)
        self.zero_size_left = max(ZERO_SIZE_RECORDS_MIN, input_size)
        self._per_record = {}  # id(schema) -> (schema, column bytes per record)

    def _column_bytes(self, schema):
        known = self._per_record.get(id(schema))
        if known is None or known[0] is not schema:
            known = self._per_record[id(schema)] = (schema, column_bytes(schema))
        return known[1]

    def charge(self, schema, header):
        """Why decoding this frame would pass a limit (and nothing is charged),
        or None (and its cost is charged to the input)."""
        n, raw_size = header.record_count, header.raw_size
        if raw_size > self.raw_limit:
            return f"raw_size {raw_size} beyond the reader limit of {self.raw_limit} bytes per frame"
        known = self._per_record.get(id(schema))  # _column_bytes, inlined: once per DATA frame
        columns = n * (known[1] if known is not None and known[0] is schema else self._column_bytes(schema))
        if columns > self.columns_limit:
            return (f"{n} records need {columns} bytes of columns, beyond the reader limit of "
                    f"{self.columns_limit} per frame")
        cost = raw_size + columns
        if cost > self.file_left:
            return "beyond the reader's decoding budget for this input"
        zero_size = not schema.record_size and not schema.variable_fields
        if zero_size and n > self.zero_size_left:
            return f"{n} zero-size records beyond the reader limit for this input"
        self.file_left -= cost
        if zero_size:
            self.zero_size_left -= n
        return None

    def repeat_charge(self, schema, header):
        """What charge() takes again for a frame of the same schema, sizes and
        codec that it has just accepted, when nothing but `file_left` can then
        differ (the caller checks it): None when more could (zero-size records)."""
        if not schema.record_size and not schema.variable_fields:
            return None
        return header.raw_size + header.record_count * self._column_bytes(schema)

    def charge_attachment(self, raw_size):
        """The same for an ATTACH frame, which the scan decodes to check it."""
        if raw_size > self.raw_limit:
            return f"raw_size {raw_size} beyond the reader limit of {self.raw_limit} bytes per frame"
        if raw_size > self.file_left:
            return "beyond the reader's decoding budget for this input"
        self.file_left -= raw_size
        return None
