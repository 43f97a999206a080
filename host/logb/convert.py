"""Raw → physical conversions (SPEC §7), vectorised. Identity is type-preserving
and never enters this pipeline; everything else is IEEE double arithmetic,
evaluated as written. There is no formula language, and there never will be.
"""

import numpy as np

from .tables import ConversionType as C


def physical(conversion, raw):
    """Physical column for a raw column. Returns raw itself for identity; a
    masked array for `table` (a key with no entry is missing); an object array
    of str for the text conversions; float64/complex128 otherwise."""
    t = conversion.type
    if t == C.identity:
        return raw
    if np.iscomplexobj(raw):
        # Assemble f(re) + i·f(im) part by part: `re + 1j * im` would compute
        # 0·f(im) for the real part and turn a finite f(re) into NaN whenever
        # f(im) is infinite or NaN.
        out = np.empty(raw.shape, np.complex128)
        out.real = _numeric(conversion, raw.real.astype(np.float64))
        out.imag = _numeric(conversion, raw.imag.astype(np.float64))
        return out
    x = raw.astype(np.float64)  # integers beyond 2**53 round to nearest, ties to even
    if t in (C.linear, C.rational, C.table_interp):
        return _numeric(conversion, x)
    if t == C.table:
        keys, values = _first_wins(conversion.entries)
        pos, hit = _lookup(keys, x)
        found = values[pos] if len(values) else np.full(len(x), np.nan)  # an empty table: all missing
        return np.ma.masked_array(np.where(hit, found, np.nan), mask=~hit)
    if t == C.value_to_text:
        keys, texts = _first_wins(conversion.entries)
        pos, hit = _lookup(keys, x)
        out = np.full(len(x), conversion.default, object)
        out[hit] = texts[pos[hit]]
        return out
    if t == C.range_to_text:
        return _range_to_text(conversion.entries, conversion.default, x)
    raise ValueError(f"unknown conversion type {t}")


def _range_to_text(entries, default, x):
    """`lo <= x <= hi`, the first matching entry in stored order, else the
    default — in O((entries + records) log entries), not entries x records.

    The entries' bounds cut the line into cells (each bound, and each open
    gap between two bounds), and every x falls in exactly one. Entries are
    laid over the cells in stored order, each taking only the cells no earlier
    entry took (a union-find skips the taken ones), so each cell is taken
    once and holds the first entry that covers it."""
    spans = [(lo, hi, text) for lo, hi, text in entries if lo <= hi]  # NaN bounds and lo > hi match nothing
    bounds = np.unique(np.array([b for lo, hi, _ in spans for b in (lo, hi)], np.float64))
    # cell 2j+1 is bounds[j] itself, cell 2j the gap below it; 2*len(bounds) the gap above all
    ncells = 2 * len(bounds) + 1
    owner = np.full(ncells, -1, np.intp)
    free = list(range(ncells + 1))  # free[c]: the first untaken cell at or after c

    def first_free(c):
        root = c
        while free[root] != root:
            root = free[root]
        while free[c] != root:
            free[c], c = root, free[c]
        return root

    for i, (lo, hi, _text) in enumerate(spans):
        c = first_free(2 * int(np.searchsorted(bounds, lo)) + 1)
        last = 2 * int(np.searchsorted(bounds, hi)) + 1
        while c <= last:
            owner[c] = i
            free[c] = c + 1
            c = first_free(c + 1)
    texts = np.array([default] + [text for _, _, text in spans], object)
    j = np.searchsorted(bounds, x)  # bounds[j-1] < x <= bounds[j]
    on_bound = (j < len(bounds)) & (bounds[np.minimum(j, len(bounds) - 1)] == x) if len(bounds) else \
        np.zeros(len(x), bool)
    cell = 2 * j + on_bound
    cell = np.where(np.isnan(x), -1, cell)  # NaN lies in no range
    picked = np.where(cell >= 0, owner[np.maximum(cell, 0)], -1)
    return texts[picked + 1]


def _numeric(conversion, x):
    t = conversion.type
    with np.errstate(all="ignore"):
        if t == C.linear:
            a, b = conversion.coeffs
            return a + b * x
        if t == C.rational:
            p1, p2, p3, p4, p5, p6 = conversion.coeffs
            return (p1 * x * x + p2 * x + p3) / (p4 * x * x + p5 * x + p6)
        if t == C.table_interp:
            return _interp(conversion.entries, x)
    raise ValueError(f"conversion {t} is not numeric")


def _interp(entries, x):
    """SPEC §7.3: a key's own value on a key; inside, as written,
    v_j + ((x - k_j) * (v_j+1 - v_j)) / (k_j+1 - k_j) (np.interp computes the
    slope first and rounds differently); clamped outside; NaN stays NaN."""
    keys = np.array([k for k, _ in entries], np.float64)
    vals = np.array([v for _, v in entries], np.float64)
    n = len(keys)
    j = np.clip(np.searchsorted(keys, x, side="right") - 1, 0, max(n - 2, 0))
    if n > 1:
        k0, k1, v0, v1 = keys[j], keys[j + 1], vals[j], vals[j + 1]
        out = v0 + ((x - k0) * (v1 - v0)) / (k1 - k0)
    else:
        out = np.full(len(x), vals[0])
    out = np.where(x <= keys[0], vals[0], out)
    out = np.where(x >= keys[-1], vals[-1], out)
    hit = np.clip(np.searchsorted(keys, x), 0, n - 1)
    out = np.where(keys[hit] == x, vals[hit], out)
    out[np.isnan(x)] = np.nan
    return out


def _first_wins(entries):
    """Sorted unique keys and their values; the first entry of a repeated key wins."""
    seen = {}
    for key, value in entries:
        if key == key and key not in seen:  # NaN keys never match anything
            seen[key] = value
    keys = np.array(sorted(seen), np.float64)
    values = np.empty(len(keys), object if any(isinstance(v, str) for v in seen.values()) else np.float64)
    values[:] = [seen[k] for k in keys.tolist()]
    return keys, values


def _lookup(keys, x):
    if not len(keys):
        return np.zeros(len(x), np.intp), np.zeros(len(x), bool)
    pos = np.clip(np.searchsorted(keys, x), 0, len(keys) - 1)
    return pos, keys[pos] == x
