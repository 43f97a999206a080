"""The seal a clean close writes, INDEX then END (SPEC §9), and its checks
against the frames. Both only ever accelerate: whatever disagrees with the
frames is reported and the frames stand.

The scan (reader.LogbFile) checks every END and INDEX it met with
end_problems() and index_problem(); opening from the tail (tail.py) follows
the same END -> INDEX pointers (end_targets, entry_offset) and checks each
entry against the DATA frame it reaches (entry_problem).
"""

from .framing import FRAME_OVERHEAD
from .frames import END_PAYLOAD_SIZE
from .tables import AxisMode

END_FRAME_SIZE = FRAME_OVERHEAD + END_PAYLOAD_SIZE  # the last 28 bytes of a sealed file


def end_targets(end_offset, end):
    """(offset of the session's INDEX or None, offset of its first SYNC) that
    the END frame at `end_offset` points back to (SPEC §9.2)."""
    index_offset = end_offset - end.index_back_offset if end.index_back_offset else None
    return index_offset, end_offset - end.session_bytes


def end_problems(end_offset, end, sync_offsets, index_offsets):
    """What the END frame at `end_offset` points to that is not there."""
    index_offset, session_start = end_targets(end_offset, end)
    problems = []
    if index_offset is not None and index_offset not in index_offsets:
        problems.append("END points to no INDEX frame")
    if session_start not in sync_offsets:
        problems.append("END session_bytes does not lead to a SYNC frame (session start lost?)")
    return problems


def entry_offset(index_offset, entry):
    """Where the DATA frame an INDEX entry names starts."""
    return index_offset - entry.back_offset


def entry_problem(entry, header, schema):
    """How an INDEX entry disagrees with the header of the DATA frame it points
    to (worded to go before "at offset N"), or None. An explicit axis's first
    value is known only once the frame is decoded: that comparison is the
    decoder's."""
    if header.record_count != entry.record_count or header.run_id != entry.run_id:
        return "no matching DATA frame"
    if (schema.axis_mode != AxisMode.explicit or not entry.record_count) and \
            header.axis_base_raw != entry.first_axis_raw:
        return "first_axis of the frame"
    return None


def index_problem(index_offset, index, session_start, streams, data_frames):
    """Why the INDEX at `index_offset` disagrees with the frames it covers
    (SPEC §9.1), or None; with it the first_axis it claims per DATA offset.

    `streams`: uuid -> the scan's stream (with .schema; None when unreadable);
    `data_frames`: DATA offset -> (stream or None, DataHeader), every DATA
    frame the scan found in this session before the INDEX."""
    covered = {}
    for uuid, entries in index.streams:
        stream = streams.get(uuid)
        if stream is None or stream.schema is None:
            continue  # an unreadable stream's entries mean nothing
        last = -1
        for e in entries:
            target = entry_offset(index_offset, e)
            if not session_start <= target < index_offset or target <= last:
                return "an entry points outside its session or out of file order", {}
            last = target
            found = data_frames.get(target)
            problem = "no matching DATA frame" if found is None or found[0] is not stream else \
                entry_problem(e, found[1], stream.schema)
            if problem:
                return f"{problem} at offset {target}", {}
            covered[target] = e.first_axis_raw
    for target, (stream, _header) in data_frames.items():
        if stream is not None and stream.schema is not None and target not in covered:
            return f"the DATA frame at offset {target} is missing", {}
    return None, covered
