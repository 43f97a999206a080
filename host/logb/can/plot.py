"""Plots of signals against time: any image format matplotlib writes (Agg backend),
chosen by the output's extension, or a self-contained interactive HTML page.

A signal is named `Message.Signal` or `Signal` (CAN: decoded with
logb.can.decode from the per-message streams, or from the raw bus streams
with --dbc or the file's embedded DBC), or `STREAM.FIELD` (any stream with a
time axis: the field's physical values). `collect` finds them, `write` draws
them against x values the caller chose (UTC nanoseconds, or seconds), one
panel per unit or per signal; a signal without a unit never shares a panel.
Discrete signals (value tables, single bits, integers with few levels) are
drawn as steps: the value holds until the next frame.
"""

import json
import os
from dataclasses import dataclass

import numpy as np

from ..errors import NotFoundError, NothingToDecodeError, UnknownSignalError, UsageError, did_you_mean
from ..tables import DataType

_PLOTTABLE = (DataType.uint, DataType.sint, DataType.float, DataType.bool)
STEP_LEVELS = 32  # an integer signal with at most this many distinct values is a state, drawn as steps
PANELS = ("unit", "signal")
HTML_POINTS = 200_000  # per series in an HTML page; beyond it, min/max per bucket (the browser stays quick)
# what matplotlib writes that is no plot a person opens (raw pixel buffers; pgf needs LaTeX)
_NOT_IMAGES = {"raw", "rgba", "pgf"}


@dataclass
class Series:
    label: str
    unit: str
    axis: np.ndarray  # int64 ticks
    axis_exp: int
    session: object  # session index per record (array), or None when unknown
    values: np.ndarray  # float64
    steps: bool = False  # discrete states (a value table): drawn as steps

    def discrete(self):
        """Drawn as steps: a value table or a bit, or integers with few levels (a gear, a
        counter, a status): interpolating between them draws values the bus never carried."""
        if self.steps:
            return True
        v = self.values[np.isfinite(self.values)]
        return bool(len(v)) and bool(np.all(v == np.round(v))) and len(np.unique(v)) <= STEP_LEVELS


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
        from .bus import is_message_stream, is_raw_bus_stream
        from .decode import embedded_dbc

        names = available(f, dbc)
        guess = "".join(did_you_mean(m, names) for m in missing)
        raw = [s for s in f.streams.values() if is_raw_bus_stream(s)]
        if raw and dbc is None and embedded_dbc(f, raw[0]) is None and \
                not any(is_message_stream(s) for s in f.streams.values()):
            # CAN frames but nothing that names their signals: the usual first try on a trace; the
            # input falls short (exit 1), as `logb decode` says of it
            raise NothingToDecodeError(f"no signal {', '.join(map(repr, missing))}: this file has CAN frames but no "
                                       f"DBC (none attached, no per-message streams); give one with --dbc FILE.dbc")
        hint = f"; it has {', '.join(names[:15])}{', …' if len(names) > 15 else ''}" if names else ""
        raise UnknownSignalError(f"no signal {', '.join(map(repr, missing))} in this file{guess}{hint}")
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


def formats():
    """The output extensions `write` understands: html and what this matplotlib writes."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    images = set(Figure().canvas.get_supported_filetypes()) - _NOT_IMAGES
    return ["html"] + sorted(images)


def format_of(path):
    """The format `path`'s extension asks for; UsageError listing the supported ones."""
    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    known = formats()
    if ext not in known:
        raise UsageError(f"{path}: cannot tell the plot format from {('.' + ext) if ext else 'no extension'}; "
                         f"supported: {', '.join('.' + k for k in known)}")
    return ext


def panels_of(series, panels="unit"):
    """Lists of series indices, one list per panel: per signal, or per unit (a signal
    without a unit alone: 0.5 beside -2041 on one axis shows neither)."""
    if panels not in PANELS:
        raise UsageError(f"--panels {panels!r}: expected {' or '.join(PANELS)}")
    groups = {}
    for i, s in enumerate(series):
        key = s.unit if panels == "unit" and s.unit else ("", i)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def _ylabel(series, group):
    unit = series[group[0]].unit
    return unit if unit else "(no unit)"


XLABELS = {"utc": "time (UTC)", "relative": "time [s] after the recording's start",
           "device": "time [s] on the logger's axis"}


def figure(series, xs, basis, panels="unit", title=None, size=(11.0, 3.0)):
    """A matplotlib Figure of `series` against `xs` (per series: int64 UTC ns when `basis`
    is "utc", else float seconds), one axes per panel, legends right of the data."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure

    groups = panels_of(series, panels)
    fig = Figure(figsize=(size[0], max(2.2, size[1] * len(groups)) + 0.6), layout="constrained")
    axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
    for panel, group in zip(axes, groups):
        for i in group:
            s, x = series[i], xs[i]
            xv = x.astype("datetime64[ns]") if basis == "utc" else np.asarray(x, np.float64)
            panel.plot(xv, s.values, label=s.label, linewidth=0.9,
                       drawstyle="steps-post" if s.discrete() else "default",
                       marker="." if len(x) < 200 else None, markersize=3)
        panel.set_ylabel(_ylabel(series, group))
        panel.grid(True, alpha=0.3)
        # outside the axes: a legend inside covers the data it names
        panel.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0.0, fontsize="small")
    bottom = axes[-1]
    if basis == "utc":
        bottom.xaxis.set_major_formatter(mdates.ConciseDateFormatter(bottom.xaxis.get_major_locator()))
    bottom.set_xlabel(XLABELS[basis])
    if title:
        fig.suptitle(title)
    return fig


def write(series, xs, basis, out, fmt, panels="unit", title=None, size=(11.0, 3.0)):
    """Write the plot to `out` (a path or binary file) in `fmt` (format_of). Returns
    {"panels": [[label, ...], ...], "ylabels": [...], "xlabel": ..., "points": n,
    "decimated": {label: points kept}} (HTML only decimates)."""
    groups = panels_of(series, panels)
    info = {"panels": [[series[i].label for i in g] for g in groups],
            "ylabels": [_ylabel(series, g) for g in groups], "xlabel": XLABELS[basis],
            "points": sum(len(x) for x in xs), "decimated": {}}
    if fmt == "html":
        page, info["decimated"] = html(series, xs, basis, groups, title)
        if isinstance(out, (str, os.PathLike)):
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(page)
        else:
            out.write(page.encode("utf-8"))
        return info
    fig = figure(series, xs, basis, panels, title, size)
    fig.savefig(out, format=fmt, dpi=100)
    return info


def minmax(x, y, buckets):
    """(x, y) cut to at most 2 * buckets points: per bucket of equal x width, the smallest
    and the largest y at their own x, in x order, so every spike and dip stays visible."""
    if len(x) <= 2 * buckets:
        return x, y
    x = np.asarray(x, np.float64)
    edges = np.linspace(x[0], x[-1], buckets + 1)
    b = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, buckets - 1)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # x is sorted: buckets are runs
    lo = np.minimum.reduceat(y, starts)
    hi = np.maximum.reduceat(y, starts)
    keep = np.zeros(len(x), bool)
    # the first row of each run holding the run's minimum, and the one holding its maximum
    run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(x)]))
    for target in (lo, hi):
        hit = np.flatnonzero(y == target[run])
        first = np.unique(run[hit], return_index=True)[1]
        keep[hit[first]] = True
    return x[keep], y[keep]


def html(series, xs, basis, groups, title=None):
    """(a self-contained HTML page, {label: points kept}): the data inline as JSON, the
    drawing code inline (no network fetch); each series of more than HTML_POINTS points is
    cut to min/max per bucket, and the page says so. In the browser: wheel zooms the time
    axis, drag pans, double-click shows everything; each redraw is min/max per pixel."""
    t0 = min((int(x.min()) for x in xs if len(x)), default=0) if basis == "utc" else 0
    data, decimated = [], {}
    for s, x in zip(series, xs):
        sx = (np.asarray(x, np.int64) - t0) * 1e-9 if basis == "utc" else np.asarray(x, np.float64)
        sy = np.asarray(s.values, np.float64)
        ok = np.isfinite(sy)
        sx, sy = sx[ok], sy[ok]
        kx, ky = minmax(sx, sy, HTML_POINTS // 2)
        if len(kx) < len(sx):
            decimated[s.label] = len(kx)
        data.append({"label": s.label, "unit": s.unit, "steps": s.discrete(), "n": int(len(sx)),
                     "x": np.round(kx, 9).tolist(), "y": ky.tolist()})
    notes = [f"{label}: {next(d['n'] for d in data if d['label'] == label):,} points, shown as the "
             f"minimum and maximum of each of {HTML_POINTS // 2:,} equal time buckets ({kept:,} points)"
             for label, kept in decimated.items()]
    meta = {"title": title or "", "basis": basis, "t0_ns": t0, "xlabel": XLABELS[basis],
            "panels": [{"ylabel": _ylabel(series, g), "series": g} for g in groups], "notes": notes}
    payload = json.dumps({"meta": meta, "series": data}, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE.replace("@TITLE@", _escape(title or "logb plot")).replace("@DATA@", payload), decimated


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<style>
body{font:13px system-ui,sans-serif;margin:12px;color:#222}
.row{display:flex;align-items:flex-start;margin-bottom:6px}
canvas{border:1px solid #ccc;cursor:grab;flex:none}
.legend{margin-left:8px;min-width:180px}.legend div{white-space:nowrap}
.legend span{display:inline-block;width:14px;height:3px;margin-right:5px;vertical-align:middle}
#notes{color:#a40;margin-top:8px}#help{color:#666}
</style></head><body>
<h3 id="title"></h3><div id="help">wheel: zoom time · drag: pan · double-click: everything</div>
<div id="plots"></div><div id="xlabel"></div><div id="notes"></div>
<script id="logb-data" type="application/json">@DATA@</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("logb-data").textContent);
const M = D.meta, COLORS = ["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2","#7f7f7f"];
document.getElementById("title").textContent = M.title;
document.getElementById("xlabel").textContent = M.xlabel;
for (const n of M.notes) {
  const d = document.createElement("div"); d.textContent = "decimated: " + n;
  document.getElementById("notes").appendChild(d);
}
let lo = Infinity, hi = -Infinity;
for (const s of D.series) if (s.x.length) { lo = Math.min(lo, s.x[0]); hi = Math.max(hi, s.x[s.x.length - 1]); }
if (!(hi > lo)) { lo = (isFinite(lo) ? lo : 0) - 1; hi = lo + 2; }
const FULL = [lo, hi]; let view = [lo, hi];
const W = Math.max(400, Math.min(1400, window.innerWidth - 260)), H = 220, PAD = {l: 64, r: 8, t: 8, b: 22};
function lower(a, v) {  // the first index with a[i] >= v (a sorted)
  let i = 0, j = a.length;
  while (i < j) { const m = (i + j) >> 1; if (a[m] < v) i = m + 1; else j = m; }
  return i;
}
function tick(v) {
  if (M.basis !== "utc") return +v.toPrecision(8) + " s";
  return new Date(M.t0_ns / 1e6 + v * 1e3).toISOString().replace("T", " ").replace("Z", "");
}
const panels = M.panels.map(p => {
  const row = document.createElement("div"); row.className = "row";
  const c = document.createElement("canvas"); c.width = W; c.height = H; row.appendChild(c);
  const leg = document.createElement("div"); leg.className = "legend"; leg.innerHTML = "<b></b>";
  leg.firstChild.textContent = p.ylabel;
  p.series.forEach((i, k) => {
    const d = document.createElement("div"), sw = document.createElement("span"), s = D.series[i];
    sw.style.background = COLORS[k % COLORS.length]; d.appendChild(sw);
    d.appendChild(document.createTextNode(s.label + (s.steps ? " (steps)" : ""))); leg.appendChild(d);
  });
  row.appendChild(leg); document.getElementById("plots").appendChild(row);
  return {c: c, p: p};
});
function draw() {
  const [a, b] = view, pw = W - PAD.l - PAD.r, ph = H - PAD.t - PAD.b, sx = v => PAD.l + (v - a) / (b - a) * pw;
  for (const {c, p} of panels) {
    const g = c.getContext("2d"); g.clearRect(0, 0, W, H);
    // per series and pixel column: first, min, max, last of the visible points
    const cols = p.series.map(i => {
      const s = D.series[i], out = [];
      let i0 = Math.max(0, lower(s.x, a) - 1), i1 = Math.min(s.x.length, lower(s.x, b) + 1);
      let px = -1, cur = null;
      for (let k = i0; k < i1; k++) {
        const x = Math.floor(sx(s.x[k])), y = s.y[k];
        if (x !== px) { if (cur) out.push(cur); cur = {x: x, first: y, min: y, max: y, last: y}; px = x; }
        else { cur.min = Math.min(cur.min, y); cur.max = Math.max(cur.max, y); cur.last = y; }
      }
      if (cur) out.push(cur); return out;
    });
    let ylo = Infinity, yhi = -Infinity;
    for (const o of cols) for (const q of o) { ylo = Math.min(ylo, q.min); yhi = Math.max(yhi, q.max); }
    if (!isFinite(ylo)) { ylo = 0; yhi = 1; }
    if (yhi === ylo) { ylo -= 0.5; yhi += 0.5; }
    const m = (yhi - ylo) * 0.05; ylo -= m; yhi += m;
    const sy = v => PAD.t + (yhi - v) / (yhi - ylo) * ph;
    g.strokeStyle = "#ddd"; g.fillStyle = "#444"; g.font = "11px sans-serif"; g.lineWidth = 1;
    for (let k = 0; k <= 4; k++) { const v = ylo + (yhi - ylo) * k / 4, y = sy(v);
      g.beginPath(); g.moveTo(PAD.l, y); g.lineTo(W - PAD.r, y); g.stroke(); g.fillText(+v.toPrecision(5), 2, y + 4); }
    for (let k = 0; k <= 4; k++) { const v = a + (b - a) * k / 4, x = sx(v);
      g.beginPath(); g.moveTo(x, PAD.t); g.lineTo(x, H - PAD.b); g.stroke();
      g.fillText(tick(v), Math.min(Math.max(0, x - 40), W - 150), H - 6); }
    g.save(); g.beginPath(); g.rect(PAD.l, PAD.t, pw, ph); g.clip();
    cols.forEach((o, k) => {
      const steps = D.series[p.series[k]].steps; g.strokeStyle = COLORS[k % COLORS.length]; g.beginPath();
      o.forEach((q, n) => {
        if (n === 0) g.moveTo(q.x, sy(q.first));
        else if (steps) { g.lineTo(q.x, sy(o[n - 1].last)); g.lineTo(q.x, sy(q.first)); }
        else g.lineTo(q.x, sy(q.first));
        g.moveTo(q.x, sy(q.min)); g.lineTo(q.x, sy(q.max)); g.moveTo(q.x, sy(q.last));
      });
      if (steps && o.length) g.lineTo(W - PAD.r, sy(o[o.length - 1].last));
      g.stroke();
    });
    g.restore();
  }
}
function at(e, c) {  // the time under the pointer
  const r = c.getBoundingClientRect();
  return view[0] + (e.clientX - r.left - PAD.l) / (W - PAD.l - PAD.r) * (view[1] - view[0]);
}
for (const {c} of panels) {
  c.addEventListener("wheel", e => { e.preventDefault(); const v = at(e, c), f = e.deltaY < 0 ? 0.8 : 1.25;
    view = [v - (v - view[0]) * f, v + (view[1] - v) * f]; draw(); }, {passive: false});
  let drag = null;
  c.addEventListener("mousedown", e => { drag = {x: e.clientX, v: view.slice()}; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", e => { if (!drag) return;
    const d = (e.clientX - drag.x) / (W - PAD.l - PAD.r) * (drag.v[1] - drag.v[0]);
    view = [drag.v[0] - d, drag.v[1] - d]; draw(); });
  c.addEventListener("dblclick", () => { view = FULL.slice(); draw(); });
}
draw();
</script></body></html>
"""
