"""Shrinking a finding's input while it still shows the same finding (same
signature), structure-aware like the mutator: whole frames dropped first,
then runs of a frame's payload, and each candidate re-encoded with valid
CRCs. Bounded by MAX_TRIES runs of the watchdog (a cpu finding costs
seconds each)."""

from .mutator import encode, parse

MAX_TRIES = 300


def minimise(dog, data, finding, max_tries=MAX_TRIES):
    """(smallest input found, its Finding)."""
    tries = 0

    def same(candidate):
        nonlocal tries
        tries += 1
        got = dog.run(candidate)
        return got if got is not None and got.signature == finding.signature else None

    pieces = parse(data)
    # 1. drop chunks of pieces, halving the chunk size (ddmin over frames)
    chunk = max(1, len(pieces) // 2)
    while chunk >= 1 and tries < max_tries:
        i, shrunk = 0, False
        while i < len(pieces) and tries < max_tries:
            trial = pieces[:i] + pieces[i + chunk:]
            got = same(encode(trial)) if trial else None
            if got is not None:
                pieces, finding, shrunk = trial, got, True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    # 2. cut the tail of each remaining payload, longest cuts first
    for p in pieces:
        if p.raw is not None:
            continue
        cut = len(p.payload) // 2
        while cut and tries < max_tries:
            full = p.payload
            p.payload = full[:len(full) - cut]
            got = same(encode(pieces))
            if got is not None:
                finding = got
            else:
                p.payload = full
                cut //= 2
    return encode(pieces), finding
