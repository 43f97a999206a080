"""Fuzzing Logb's read path (issue 10, build item 7).

Hostile writers, not random damage, are the threat: a CRC stops a flipped bit
but not a writer that computes valid CRCs over lying lengths, counts, sizes
and tables. So the mutator (mutator.py) parses an input into frames, changes
their fields, payloads and order, and re-encodes them with valid CRCs.

- target.py   the whole read path on one input, under one backend, and the
              checks: only LogbError escapes, each step within its CPU and RSS
              budget, the C and Python backends agree.
- watchdog.py a child process that runs the target under RLIMIT_AS/RLIMIT_CPU,
              so a bomb or a hang is a finding and never takes down the caller.
- seeds.py    deterministic seed files (logb.Writer) beside corpus/*.logb.
- __main__.py the driver: `python -m tools.fuzz run|replay|minimise` (see --help);
              `./run fuzz` runs a long coverage-guided campaign with atheris.

Every finding is written, minimised, to corpus/fuzz/ and replayed by
tests/test_fuzz.py.
"""
