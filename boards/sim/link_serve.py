# After main.py (boards/sim/run.py --serial TTY): the recording is closed;
# keep serving the link (link_setup.py made it) until the board is stopped,
# or for `link_linger_s` seconds when that setting is given.
import json
import time

import simhw

LINK_STORAGE.on = False  # noqa: F821  (defined by link_setup.py, same globals)
print("LINKSTATS " + json.dumps(LINK_STATS))  # noqa: F821  (the link's polls while recording)
print("SERVING")
_linger = simhw.arg("link_linger_s", None)
_t0 = time.ticks_ms()
while _linger is None or time.ticks_diff(time.ticks_ms(), _t0) < float(_linger) * 1000:
    if not LINK.poll() and not LINK.sending:  # noqa: F821
        simhw.sleep_ms(1)
