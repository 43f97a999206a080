"""Pulls through the fault injector (tests/serial/ptylink.py): bytes dropped,
bits flipped, noise, stalls and disconnects, device to host and host to
device. Every pull ends with a byte-identical copy whose CRC the device
confirmed — or with a clear error, the partial copy kept for the next pull,
no file at the final name, and nothing deleted on the device."""

import io
import json
import os
import pathlib
import random
import sys

import pytest

import logb
from logb.cli.main import main as logb_main

sys.path.insert(0, str(pathlib.Path(__file__).parent / "serial"))
import rig  # noqa: E402
from test_pull import fw_recording  # noqa: E402

pytestmark = pytest.mark.single_backend

KINDS = ("drop", "flip", "noise", "stall", "disconnect")


def pull(*args):
    out = io.StringIO()
    rc = logb_main(["pull", "--json", "--quiet", "--timeout", "1.5", "--reconnect", "20", *map(str, args)], out=out)
    return rc, {r["name"]: r for r in map(json.loads, out.getvalue().splitlines())}


@pytest.fixture(scope="module")
def device_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("sd")
    fw_recording(d / "rec.logb", 60000, rig.LANCER)  # ~1.2 MB
    return d


def random_faults(seed, size):
    rnd = random.Random(seed)
    faults = []
    for _ in range(6):
        kind = rnd.choice(KINDS)
        f = {"dir": "d2h" if rnd.random() < 0.8 else "h2d", "at": rnd.randrange(size), "kind": kind}
        if f["dir"] == "h2d":
            f["at"] = rnd.randrange(400)
            if kind in ("stall", "disconnect"):
                f["kind"] = "drop"
        f["n"] = {"drop": rnd.randint(1, 40), "flip": 1, "noise": rnd.randint(1, 300), "stall": 1.6,
                  "disconnect": 0.7}[f["kind"]]
        f["bit"] = rnd.randrange(8)
        faults.append(f)
    return faults


CASES = {
    "drop": [{"at": 300_000, "kind": "drop", "n": 3}],
    "flip": [{"at": 200_000, "kind": "flip", "bit": 5}, {"at": 900_000, "kind": "flip", "bit": 0}],
    "flip-header": [{"at": 2048 + 16 + 16 + 5, "kind": "flip", "bit": 2}],  # a DATA header's length field
    "noise": [{"at": 500_000, "kind": "noise", "n": 77}],
    "stall": [{"at": 400_000, "kind": "stall", "n": 3.0}],
    "request-flip": [{"dir": "h2d", "at": 60, "kind": "flip", "bit": 1}],
    "request-drop": [{"dir": "h2d", "at": 40, "kind": "drop", "n": 1}],
    "disconnect": [{"at": 600_000, "kind": "disconnect", "n": 1.0}],
    "random-1": random_faults(1, 1_200_000),
    "random-2": random_faults(2, 1_200_000),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cpython_device_through_faults(case, device_dir, tmp_path):
    src = device_dir / "rec.logb"
    out = tmp_path / "copies"
    with rig.Cable(tmp_path) as cable:
        d = rig.cpython_device(cable.device, device_dir)
        try:
            cable.inject(CASES[case])
            rc, res = pull("--port", cable.host, "--all", out)
        finally:
            d.kill()
        log = cable.close()
    r = res["rec.logb"]
    assert any(line.startswith("FAULT") for line in log), log
    if rc == 0:
        assert rig.same_bytes(src, out / "rec.logb") and r["crc32c"] == f"{logb.crc.crc32c(src.read_bytes()):08x}"
        assert r["retries"] >= (1 if case in ("drop", "flip", "noise", "stall", "disconnect") else 0)
    else:  # allowed only with a clear reason, and nothing under the final name
        assert r["error"] and not (out / "rec.logb").exists()


def test_delete_after_faults_only_with_a_verified_copy(tmp_path):
    dev = tmp_path / "sd"
    dev.mkdir()
    src = fw_recording(dev / "rec.logb", 30000, rig.LANCER)
    data = src.read_bytes()
    out = tmp_path / "copies"
    with rig.Cable(tmp_path, random_faults(7, 600_000)) as cable:
        d = rig.cpython_device(cable.device, dev)
        try:
            rc, res = pull("--port", cable.host, "--all", "--delete", out)
        finally:
            d.kill()
    assert rc == 0 and res["rec.logb"]["deleted"] and not src.exists()
    assert (out / "rec.logb").read_bytes() == data


def test_a_cable_gone_for_good_is_a_clear_error_and_the_next_pull_resumes(tmp_path, device_dir, capsys):
    src = device_dir / "rec.logb"
    out = tmp_path / "copies"
    with rig.Cable(tmp_path) as cable:
        d = rig.cpython_device(cable.device, device_dir)
        try:
            # unplugged until plug(): however slowly pull runs, it gives up before the cable is back
            cable.inject([{"at": 500_000, "kind": "disconnect", "n": 3600}])
            o = io.StringIO()
            rc = logb_main(["pull", "--json", "--quiet", "--timeout", "1", "--reconnect", "1.5", "--delete", "--all",
                            str(out)] + ["--port", cable.host], out=o)
            assert rc == 1
            err = capsys.readouterr().err
            assert "gave up reconnecting" in err or "gave up reconnecting" in o.getvalue()
            assert not (out / "rec.logb").exists() and (out / ".rec.logb.part").exists() and src.exists()
            kept = json.loads((out / ".rec.logb.part.json").read_text())["verified"]
            assert kept > 100_000
            cable.plug()
            rc, res = pull("--port", cable.host, "--all", out)
        finally:
            d.kill()
    assert rc == 0 and res["rec.logb"]["status"] == "resumed"
    assert res["rec.logb"]["transferred"] <= src.stat().st_size - kept
    assert rig.same_bytes(src, out / "rec.logb") and rig.no_temp_files(out) == []


def test_micropython_board_through_faults(tmp_path):
    sd = tmp_path / "sd"
    sd.mkdir()
    out = tmp_path / "copies"
    with rig.Cable(tmp_path) as cable:
        d = rig.micropython_device(cable.device, sd / "rec.logb", limit=30000, deadline=120)
        try:
            d.wait_for("SERVING", 60)
            cable.inject([{"at": 100_000, "kind": "drop", "n": 5}, {"at": 250_000, "kind": "flip", "bit": 6},
                          {"at": 330_000, "kind": "noise", "n": 20}, {"at": 400_000, "kind": "disconnect", "n": 1.0},
                          {"dir": "h2d", "at": 70, "kind": "flip", "bit": 3}])
            rc, res = pull("--port", cable.host, "--all", out)
        finally:
            d.kill()
        log = cable.close()
    assert sum(line.startswith("FAULT") for line in log) >= 4, log
    assert rc == 0 and res["rec.logb"]["retries"] >= 3, res
    assert rig.same_bytes(sd / "rec.logb", out / "rec.logb") and logb.LogbFile(out / "rec.logb").report.clean


def test_an_unplugged_cable_leaves_no_port_to_open(tmp_path):
    """While unplugged the host's path is gone, as a by-id link is: the pty it
    pointed at is free for anyone's next openpty (the kernel reuses the lowest
    number), and a reconnect that opened it would talk to someone else's device."""
    with rig.Cable(tmp_path) as cable:
        assert os.path.exists(cable.host)
        cable.disconnect(3600)
        assert rig.wait_until(lambda: not os.path.lexists(cable.host))
        other = os.openpty()
        try:
            with pytest.raises(OSError):
                os.close(os.open(cable.host, os.O_RDWR | os.O_NOCTTY))
        finally:
            os.close(other[0])
            os.close(other[1])
        cable.plug()
        assert os.path.exists(cable.host)
