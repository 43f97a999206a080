"""Per-id timing statistics and a bus load estimate of CAN buses (formats.read_logb:
every frame of each bus, whatever the routing).

Per id (and frame kind: data, remote, error) of each bus: the frame count, the
mean period ((last - first) / (count - 1)), the jitter (standard deviation of
the intervals between consecutive frames), the median, min and max interval,
gaps (intervals longer than `gap_factor` × the median interval) and the DLC
codes seen.

Bus load: every frame's length in bits from ISO 11898-1 — classic frames
47 + 8n bits (11-bit id) or 67 + 8n (29-bit id), including the 3-bit
interframe space; CAN FD frames 17 (36) arbitration bits + 12 trailing bits at
the nominal rate and 27 + 8n (n ≤ 16) or 31 + 8n data-phase bits plus 6 or 7
fixed stuff bits at the data rate when BRS is set — summed as time and divided
by the bus's time span. `load` counts no dynamic stuff bits; `load_worst` adds
the worst case (one per 4 bits of the stuffed region), so the true load lies
between. `peak_load` is the highest `load` over consecutive windows of
`load_window` seconds (logb stats --load-window). Error frames are counted but not in the load.

Short frames: given the bus's messages (its per-message streams' routes, or the
entries of its DBC), the data frames each message got that were shorter than
the message (their signals past the data are missing, not zero).
"""

import numpy as np

from .layout import FLAG_BRS, FLAG_ERROR, FLAG_EXTENDED, FLAG_FD, FLAG_REMOTE, dlc_lengths

KINDS = ("data", "remote", "error")


def frame_bits(flags, dlc):
    """(nominal-rate bits, data-rate bits, worst-case dynamic stuff bits) per frame; the
    data-rate bits are those a BRS frame sends at the data bit rate (0 otherwise)."""
    flags = np.asarray(flags, np.uint8)
    ext = (flags & FLAG_EXTENDED) != 0
    fd = (flags & FLAG_FD) != 0
    brs = fd & ((flags & FLAG_BRS) != 0)
    remote = (flags & FLAG_REMOTE) != 0
    n = dlc_lengths(dlc, fd)
    n = np.where(remote & ~fd, 0, n)
    # classic: SOF..CRC delimiter, ACK, EOF, IFS
    classic = np.where(ext, 67, 47) + 8 * n
    classic_stuff = (np.where(ext, 54, 34) + 8 * n - 1) // 4
    # CAN FD: arbitration phase (+ ACK, EOF, IFS) at the nominal rate; the data phase
    # (ESI, DLC, data, stuff count, CRC, CRC delimiter and the fixed stuff bits) maybe faster
    arb = np.where(ext, 36, 17) + 12
    data_phase = np.where(n <= 16, 27 + 6, 31 + 7) + 8 * n
    fd_stuff = (np.where(ext, 36, 17) + 5 + 8 * n - 1) // 4
    nominal = np.where(fd, arb + np.where(brs, 0, data_phase), classic)
    fast = np.where(brs, data_phase, 0)
    stuff = np.where(fd, fd_stuff, classic_stuff)
    return nominal, fast, stuff


def message_entries(f, bus_name):
    """What routes a bus's frames to messages: its per-message streams' routes, else the
    entries of the DBC attached to the file; [] when neither exists."""
    from .bus import message_routes
    from .dbc import compile_dbc
    from .decode import embedded_dbc

    routes = message_routes(f, bus_name)
    if routes:
        return routes
    dbc = embedded_dbc(f)
    return compile_dbc(dbc, bus=bus_name).entries if dbc is not None else []


def short_frames(bus, entries):
    """{message stream name: {"short", "frames", "length"}} of the messages (entries as
    message_entries gives) that got a data frame shorter than the message."""
    from .decode import data_frames, frame_keys, missing_bytes, route_rows

    out = {}
    if not entries or not len(bus):
        return out
    for i, rows in route_rows(entries, frame_keys(bus.id, bus.flags), bus.data, data_frames(bus.flags)).items():
        e = entries[i]
        short = int(np.count_nonzero(missing_bytes(e.payload_len, bus.dlc[rows], bus.flags[rows])))
        if short:
            out[e.name] = {"short": short, "frames": len(rows), "length": e.payload_len}
    return out


def bus_stats(bus, axis_exp, bitrate=500_000, data_bitrate=2_000_000, gap_factor=2.0, load_window=0.1,
              messages=()):
    """Statistics of one formats.Bus (a dict, JSON-ready); `messages`: message_entries()."""
    scale = 10.0 ** axis_exp
    n = len(bus)
    flags = bus.flags
    kind = np.where(flags & FLAG_ERROR, 2, np.where(flags & FLAG_REMOTE, 1, 0)).astype(np.uint64)
    ext = ((flags & FLAG_EXTENDED) != 0).astype(np.uint64)
    key = (kind << np.uint64(30)) | (ext << np.uint64(29)) | bus.id.astype(np.uint64)
    order = np.lexsort((bus.t, key))
    k, t, dlc, fl = key[order], bus.t[order], bus.dlc[order], flags[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if n else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], n].astype(np.int64)
    ids = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        tt = t[s:e]
        iv = np.diff(tt).astype(np.float64) * scale
        count = e - s
        row = {"id": int(k[s] & np.uint64(0x1FFFFFFF)), "extended": bool(ext[order][s]),
               "kind": KINDS[int(k[s] >> np.uint64(30))], "count": count,
               "first_s": float(tt[0] * scale), "last_s": float(tt[-1] * scale),
               "mean_period_s": None, "median_period_s": None, "jitter_s": None,
               "min_period_s": None, "max_period_s": None, "gaps": 0, "max_gap_s": None,
               "dlc": sorted(set(dlc[s:e].tolist())), "fd": bool((fl[s:e] & FLAG_FD).any())}
        if count > 1:
            med = float(np.median(iv))
            gaps = iv[iv > gap_factor * med] if med > 0 else iv[:0]
            row.update(mean_period_s=float((tt[-1] - tt[0]) * scale / (count - 1)), median_period_s=med,
                       jitter_s=float(iv.std()), min_period_s=float(iv.min()), max_period_s=float(iv.max()),
                       gaps=int(len(gaps)), max_gap_s=float(gaps.max()) if len(gaps) else None)
        ids.append(row)
    out = {"name": bus.name, "frames": n, "fd": bus.fd, "ids": ids,
           "data_frames": int((kind == 0).sum()), "remote_frames": int((kind == 1).sum()),
           "error_frames": int((kind == 2).sum()), "bitrate": bitrate, "data_bitrate": data_bitrate,
           "span_s": 0.0, "load": None, "load_worst": None, "peak_load": None,
           "load_window_s": load_window,
           "short_frames": short_frames(bus, messages)}
    if n:
        tmin, tmax = int(bus.t.min()), int(bus.t.max())
        span = (tmax - tmin) * scale
        out["span_s"] = span
        nominal, fast, stuff = frame_bits(flags, bus.dlc)
        counted = kind == 0
        counted |= kind == 1
        busy = np.where(counted, nominal / bitrate + fast / data_bitrate, 0.0)
        worst = np.where(counted, stuff / bitrate, 0.0)  # stuff bits taken at the nominal rate
        if span > 0:
            out["load"] = float(busy.sum() / span)
            out["load_worst"] = float((busy.sum() + worst.sum()) / span)
            per_window = max(int(round(load_window / scale)), 1)  # ticks, exact
            if load_window and tmax - tmin >= per_window:
                slot = (bus.t - tmin) // per_window
                full = slot < (tmax - tmin) // per_window  # whole windows only
                per = np.bincount(slot[full], weights=busy[full])
                out["peak_load"] = float(per.max() / load_window) if len(per) else None
    return out


def trace_stats(trace, messages=None, **kw):
    """bus_stats of every bus; `messages`: {bus name: message_entries()}."""
    messages = messages or {}
    return [bus_stats(trace.buses[name], trace.axis_exp, messages=messages.get(name, ()), **kw)
            for name in sorted(trace.buses)]


def _ms(x):
    return "-" if x is None else f"{x * 1e3:.3f}"


def _pct(x):
    return "-" if x is None else f"{x * 100:.1f} %"


def _ends(b):
    """' (first to last frame)' in the time b["time"] names (logb stats --time), else ''."""
    if b.get("start") is None:
        return ""
    if b["time"] == "utc":
        return f" ({b['start']} to {b['end']})"
    after = " after the start" if b["time"] == "relative" else " device time"
    return f" ({b['start']:.6f} to {b['end']:.6f} s{after})"


def render(stats):
    """Plain-text tables of trace_stats() output."""
    lines = []
    for b in stats:
        lines.append(f"bus {b['name']}{' (CAN FD)' if b['fd'] else ''}: {b['frames']} frames "
                     f"({b['data_frames']} data, {b['remote_frames']} remote, {b['error_frames']} error), "
                     f"{len(b['ids'])} ids, span {b['span_s']:.3f} s{_ends(b)}")
        rate = f"{b['bitrate'] / 1e3:g} kbit/s" + (f", data phase {b['data_bitrate'] / 1e3:g} kbit/s"
                                                   if b['fd'] else "")
        lines.append(f"  bus load at {rate}: {_pct(b['load'])} without stuff bits, "
                     f"{_pct(b['load_worst'])} with worst-case stuffing; peak {_pct(b['peak_load'])} "
                     f"(windows of {b['load_window_s'] * 1e3:g} ms)")
        head = ("id", "kind", "count", "mean ms", "jitter ms", "min ms", "max ms", "gaps", "max gap ms", "dlc")
        rows = []
        for r in b["ids"]:
            ident = f"0x{r['id']:08X}" if r["extended"] else f"0x{r['id']:03X}"
            rows.append((ident, r["kind"], str(r["count"]), _ms(r["mean_period_s"]), _ms(r["jitter_s"]),
                         _ms(r["min_period_s"]), _ms(r["max_period_s"]), str(r["gaps"]), _ms(r["max_gap_s"]),
                         ",".join(str(d) for d in r["dlc"])))
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        lines.append("  " + "  ".join(h.rjust(w) if i >= 2 else h.ljust(w)
                                      for i, (h, w) in enumerate(zip(head, widths))))
        for r in rows:
            lines.append("  " + "  ".join(c.rjust(w) if i >= 2 else c.ljust(w)
                                          for i, (c, w) in enumerate(zip(r, widths))))
        for name, sf in b.get("short_frames", {}).items():
            lines.append(f"  short frames: {name}: {sf['short']} of {sf['frames']} shorter than its "
                         f"{sf['length']} bytes (their signals past the data are missing)")
    return "\n".join(lines)
