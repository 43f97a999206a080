"""The `logb` python-can interface (logb.can.pycan_bus, entry point can.interface): a
logger recording the real Lancer trace (firmware/logb under CPython, serving the Logb
link on a pty cable, tests/serial) read live through can.Bus(interface="logb"): every
frame received is one the recording holds (time, id, payload), in order, with the
logger's timestamps."""

import pathlib
import sys
import time

import pytest

can = pytest.importorskip("can")

import logb  # noqa: E402
from logb.can.bus import bus_frames  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent / "serial"))
import rig  # noqa: E402

pytestmark = [pytest.mark.single_backend,
              pytest.mark.skipif(not rig.LANCER.exists(), reason="../shared/data/traces not present")]


def test_a_live_logger_is_a_bus(tmp_path):
    dev = tmp_path / "sd"
    dev.mkdir()
    got = []
    with rig.Cable(tmp_path) as cable:
        d = rig.cpython_device(cable.device, dev, record=rig.LANCER, name="rec-0001.logb", speed=12, limit=40000)
        try:
            assert rig.wait_until(lambda: (dev / "rec-0001.logb").stat().st_size > 30000), "nothing recorded"
            with can.Bus(interface="logb", channel=str(cable.host)) as bus:
                assert "Logb logger" in bus.channel_info
                deadline = time.monotonic() + 90
                while len(got) < 500 and time.monotonic() < deadline:
                    m = bus.recv(1.0)
                    if m is not None:
                        got.append(m)
                with pytest.raises(can.CanOperationError):
                    bus.send(can.Message(arbitration_id=1))
            d.wait_for("RECORDED", 90)
        finally:
            d.kill()
    assert len(got) >= 500
    with logb.LogbFile(dev / "rec-0001.logb") as f:
        b = bus_frames(f)
        known = {}
        for i, (t, ident, code, data) in enumerate(zip(b.t.tolist(), b.id.tolist(), b.dlc.tolist(), b.data)):
            known[(round(t * 10.0 ** b.axis_exp, 6), ident, bytes(data[:code]))] = i
    rows = [known.get((round(m.timestamp, 6), m.arbitration_id, bytes(m.data))) for m in got]
    assert None not in rows  # every frame received is one the logger recorded: time, id, payload
    assert rows == sorted(rows) and len(set(rows)) == len(rows)  # once each, in the logger's order
    assert rows[-1] - rows[0] == len(rows) - 1  # and none left out between the first and the last
    assert all(m.channel == "can0" for m in got)
