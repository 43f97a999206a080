"""PNG plots of signals against time (matplotlib, Agg backend).

A signal is named `Message.Signal` or `Signal` (CAN: decoded with
logb.can.decode from the per-message streams, or from the raw bus streams
with --dbc or the file's embedded DBC), or `STREAM.FIELD` (any stream with a
time axis: the field's physical values). Signals sharing a unit share a panel,
whose y axis is labelled with that unit. The x axis is wall-clock time (UTC)
when every plotted record is dated (a unix session, or an anchored monotonic
one), else seconds of the recording's axis.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import NotFoundError, NothingToDecodeError, UnknownSignalError
from ..tables import DataType
from .formats import wall_ns_of

_PLOTTABLE = (DataType.uint, DataType.sint, DataType.float, DataType.bool)


@dataclass
class Series:
    label: str
    unit: str
    axis: np.ndarray  # int64 ticks
    axis_exp: int
    session: object  # session index per record (array), or None when unknown
    values: np.ndarray  # float64
    steps: bool = False  # discrete states (a value table): drawn as steps


def _can_series(f, specs, dbc):
    """Series for the specs CAN decoding can satisfy, and the specs it satisfied."""
    from .decode import decode_file

    try:
        decoded = decode_file(f, dbc=dbc, signals=specs)
    except NothingToDecodeError:
        return [], set()
    merged, found = {}, set()
    for d in decoded:
        for sig, phys in d.phys.items():
            hits = {s for s in specs if s in (sig, f"{d.message}.{sig}", f"{d.stream}.{sig}")}
            if not hits:
                continue
            found |= hits
            key = (d.bus, d.message, sig)
            m = merged.setdefault(key, [d, [], []])
            here = ~np.ma.getmaskarray(phys)  # a signal a short frame did not carry is absent, not 0
            m[1].append(d.axis[here])
            m[2].append(np.asarray(np.ma.getdata(phys), np.float64)[here])
    buses = {k[0] for k in merged}
    out = []
    for (bus, message, sig), (d, axes, vals) in merged.items():
        axis = np.concatenate(axes)
        values = np.concatenate(vals)
        order = np.argsort(axis, kind="stable")
        label = f"{bus}:{message}.{sig}" if len(buses) > 1 else f"{message}.{sig}"
        out.append(Series(label, d.units.get(sig, ""), axis[order], d.axis_exp, None, values[order],
                          steps=sig in d.text))  # decoded columns do not say their session
    return out, found


def _field_series(f, spec):
    """A Series for STREAM.FIELD of any stream with a time axis, or None."""
    if "." not in spec:
        return None
    sname, _, fname = spec.rpartition(".")
    try:
        stream = f.stream(sname)
    except NotFoundError:
        return None
    s = stream.schema
    if s is None or not s.is_time:
        return None
    try:
        field = s.field_named(fname)
    except KeyError:
        return None
    cols = stream.columns(fields=[fname])
    phys = cols.phys(fname)
    steps = False
    if isinstance(phys, np.ma.MaskedArray):
        phys = phys.filled(np.nan)
    if phys.dtype == object or phys.ndim != 1 or phys.dtype.kind not in "biuf":
        phys = cols.raw[fname]  # text conversions: plot the stored number
        steps = True
        if phys.ndim != 1 or phys.dtype.kind not in "biuf":
            return None
    return Series(f"{sname}.{fname}", field.unit, cols.axis, s.axis_exp, cols.session,
                  np.asarray(phys, np.float64), steps=steps or phys.dtype.kind in "bu" and field.bit_width == 1)


def collect(f, specs, dbc=None):
    """The Series of every spec; raises UnknownSignalError naming those found nowhere."""
    specs = list(dict.fromkeys(specs))
    series, found = _can_series(f, set(specs), dbc)
    for spec in specs:
        if spec in found:
            continue
        s = _field_series(f, spec)
        if s is not None:
            series.append(s)
            found.add(spec)
    missing = [s for s in specs if s not in found]
    if missing:
        names = available(f, dbc)
        hint = f"; it has {', '.join(names[:15])}{', …' if len(names) > 15 else ''}" if names else ""
        raise UnknownSignalError(f"no signal {', '.join(map(repr, missing))} in this file{hint}")
    return series


def available(f, dbc=None):
    """Names `collect` understands, from the schemas alone (no decoding)."""
    from .dbc import compile_dbc, signals_of
    from .bus import is_message_stream, is_raw_bus_stream
    from .decode import embedded_dbc

    names = []
    per_message = [s for s in f.streams.values() if is_message_stream(s)]
    for s in per_message:
        message = s.schema.meta_dict().get("logb.can.message", s.name)
        names += [f"{message}.{g.name}" for g in signals_of(s.schema)]
    raw = [s for s in f.streams.values() if is_raw_bus_stream(s)]
    if raw and (dbc is not None or not per_message):
        source = dbc if dbc is not None else embedded_dbc(f, raw[0])
        if source is not None:
            try:
                compiled = compile_dbc(source, bus=raw[0].name)
                names += [f"{e.message}.{g.name}" for e in compiled.entries for g in signals_of(e.schema)]
            except Exception:  # a hint only
                pass
    for s in f.streams.values():
        if s.schema is not None and s.schema.is_time and not is_message_stream(s):
            names += [f"{s.name}.{fd.name}" for fd in s.schema.fields
                      if fd.data_type in _PLOTTABLE and not fd.variable]
    return list(dict.fromkeys(names))


def plot(f, specs, out, dbc=None, window=None, title=None, size=(11.0, 3.0)):
    """Write a PNG of the signals `specs` to `out`. window: (t0, t1) seconds after the first
    plotted record. Returns {"series": [...], "time": "utc"|"axis", "points": n}."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    series = collect(f, specs, dbc)
    # one time base for all: wall clock if every record is dated
    walls = []
    dated = True
    one_clock = len(f.sessions) == 1 or all(x.time_base == "unix" for x in f.sessions)
    for s in series:
        if s.session is None and not one_clock:  # several clocks, and no way to tell which
            walls.append(None)
            dated = False
            continue
        session = np.zeros(len(s.axis), np.int32) if s.session is None else s.session
        ns, ok = wall_ns_of(f, s.axis, s.axis_exp, session) if f.sessions else (None, False)
        walls.append(ns)
        dated &= ok
    if dated:
        xs = walls
    else:
        xs = [s.axis * (10 ** (s.axis_exp + 9)) if s.axis_exp >= -9 else s.axis // 10 ** (-9 - s.axis_exp)
              for s in series]
    t0 = min((int(x.min()) for x in xs if len(x)), default=0)
    if window is not None:
        lo, hi = t0 + int(round(window[0] * 1e9)), t0 + int(round(window[1] * 1e9))
        for i, s in enumerate(series):
            keep = (xs[i] >= lo) & (xs[i] <= hi)
            xs[i], s.values = xs[i][keep], s.values[keep]
    units = list(dict.fromkeys(s.unit for s in series))
    fig, axes = plt.subplots(len(units), 1, sharex=True, squeeze=False,
                             figsize=(size[0], max(2.2, size[1] * len(units)) + 0.6))
    points, ylabels = 0, []
    for panel, unit in zip(axes[:, 0], units):
        for s, x in zip(series, xs):
            if s.unit != unit:
                continue
            xv = x.astype("datetime64[ns]") if dated else x.astype(np.float64) * 1e-9
            panel.plot(xv, s.values, label=s.label, linewidth=0.9,
                       drawstyle="steps-post" if s.steps else "default",
                       marker="." if len(x) < 200 else None, markersize=3)
            points += len(x)
        ylabels.append(unit if unit else "(no unit)")
        panel.set_ylabel(ylabels[-1])
        panel.grid(True, alpha=0.3)
        panel.legend(loc="upper right", fontsize="small")
    bottom = axes[-1, 0]
    if dated:
        bottom.xaxis.set_major_formatter(mdates.ConciseDateFormatter(bottom.xaxis.get_major_locator()))
        xlabel = "time (UTC)"
    else:
        xlabel = "time [s] (recording axis; not dated)"
    bottom.set_xlabel(xlabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return {"series": [s.label for s in series], "time": "utc" if dated else "axis", "points": points,
            "units": units, "ylabels": ylabels, "xlabel": xlabel}
