"""Time bases and anchors (SPEC §5.2): axis ticks → wall-clock nanoseconds,
with the basis and uncertainty of every answer. Integer arithmetic throughout,
so every conforming reader gives the same nanosecond."""

import re
from dataclasses import dataclass

from .errors import MalformedPayloadError

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

UNIX, ANCHORED, UNDATED = "unix", "anchored", "undated"
_DECIMAL = re.compile(r"-?[0-9]+")  # META numbers: optional minus, ASCII digits, nothing else


def div_round_half_even(num, den):
    """num / den rounded to the nearest integer, ties to even (den != 0)."""
    if den < 0:
        num, den = -num, -den
    q, r = divmod(num, den)
    twice = 2 * r
    if twice > den or (twice == den and q % 2):
        q += 1
    return q


def ticks_to_ns(ticks, axis_exp):
    """Exact when axis_exp >= -9, else rounded half to even."""
    if axis_exp >= -9:
        return ticks * 10 ** (axis_exp + 9)
    return div_round_half_even(ticks, 10 ** (-9 - axis_exp))


@dataclass(frozen=True)
class Anchor:
    axis_ns: int
    wall_ns: int
    source: str = ""
    uncertainty_ns: object = None  # None: unknown (which is not zero)
    offset: int = 0  # where the META frame was


@dataclass(frozen=True)
class WallTime:
    ns: object  # int, or None when undated
    basis: str
    uncertainty_ns: object = None
    extrapolated: bool = False

    def as_json(self):
        return {"ns": self.ns, "basis": self.basis,
                "uncertainty_ns": self.uncertainty_ns, "extrapolated": self.extrapolated}


_UNDATED = WallTime(None, UNDATED)


def parse_anchor(meta, offset):
    """(Anchor, problem or None) from a META dict; MalformedPayloadError says
    what makes the anchor unusable."""
    def as_i64(key):
        text = meta.get(key)
        if text is None:
            raise MalformedPayloadError(f"{key} is missing")
        if not _DECIMAL.fullmatch(text):
            raise MalformedPayloadError(f"{key}={text!r} is not a decimal integer")
        value = int(text)
        if not I64_MIN <= value <= I64_MAX:
            raise MalformedPayloadError(f"{key}={text} does not fit i64")
        return value

    axis_ns, wall_ns = as_i64("logb.anchor.axis_ns"), as_i64("logb.anchor.wall_ns")
    unc, problem = None, None
    text = meta.get("logb.anchor.uncertainty_ns")
    if text is not None:
        if _DECIMAL.fullmatch(text) and 0 <= int(text) < (1 << 64):
            unc = int(text)
        else:
            problem = f"logb.anchor.uncertainty_ns={text!r} is malformed; treated as unknown"
    return Anchor(axis_ns, wall_ns, meta.get("logb.anchor.source", ""), unc, offset), problem


class Clock:
    """Maps one writer session's axis ticks to wall time."""

    def __init__(self, time_base, anchors):
        self.time_base = time_base
        first = {}
        for a in anchors:  # equal axis_ns: the first stands (SPEC §5.5)
            first.setdefault(a.axis_ns, a)
        self.anchors = sorted(first.values(), key=lambda a: a.axis_ns)

    def wall(self, ticks, axis_exp):
        if self.time_base == "unix":
            ns = ticks_to_ns(ticks, axis_exp)
            return WallTime(ns, UNIX) if I64_MIN <= ns <= I64_MAX else _UNDATED
        if self.time_base != "monotonic" or not self.anchors:
            return _UNDATED
        a = ticks_to_ns(ticks, axis_exp)
        anchors = self.anchors
        if len(anchors) == 1:
            (only,) = anchors
            ns, unc, extra = only.wall_ns + (a - only.axis_ns), only.uncertainty_ns, a != only.axis_ns
        else:
            lo, hi, extra = self._bracket(a)
            if a == lo.axis_ns or a == hi.axis_ns:
                on = lo if a == lo.axis_ns else hi
                return self._checked(on.wall_ns, on.uncertainty_ns, False)
            span = hi.axis_ns - lo.axis_ns
            ns = lo.wall_ns + div_round_half_even((a - lo.axis_ns) * (hi.wall_ns - lo.wall_ns), span)
            u0, u1 = lo.uncertainty_ns, hi.uncertainty_ns
            unc = None if u0 is None or u1 is None else max(u0, u1)
        return self._checked(ns, unc, extra)

    @staticmethod
    def _checked(ns, unc, extrapolated):
        if not I64_MIN <= ns <= I64_MAX:
            return _UNDATED
        return WallTime(ns, ANCHORED, unc, extrapolated)

    def _bracket(self, a):
        anchors = self.anchors
        if a <= anchors[0].axis_ns:
            return anchors[0], anchors[1], a < anchors[0].axis_ns
        if a >= anchors[-1].axis_ns:
            return anchors[-2], anchors[-1], a > anchors[-1].axis_ns
        lo, hi = 0, len(anchors) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if anchors[mid].axis_ns <= a:
                lo = mid
            else:
                hi = mid
        return anchors[lo], anchors[hi], False
