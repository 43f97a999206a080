"""The firmware writer on its primary MicroPython test target: the real
v1.28 unix port (tools/micropython_build.py, `logbc` built in), firmware/logb
compiled to .mpy with viper, on both builds: x86-64, and i386, which has a
32-bit board's object sizes, 31-bit small ints (an int >= 2**30 allocates)
and ticks wrapping at 2**30 (its scenarios start 1 s before a wrap). The
64 KiB RAM cap is checked on the i386 build.

Why this port and not Node's: a real filesystem (a file sink, the config
file the SCHEMAs are restated from), a collector that runs when the heap
fills (wasm's runs only between scripts), `-X heapsize` as a hard cap, the
native emitter and the C module. Deflate compression (this port's `deflate`
only decompresses) stays on wasm (test_fw_micropython.py).

Inputs are host folders passed on argv; every script prints one RESULT line.
"""

import io
import json

import pytest

import logb

import fwload
import fwtools
import mpreal

pytestmark = pytest.mark.single_backend

HERE = fwload.ROOT / "tests" / "firmware"
# Where the frames' ticks start: on the 32-bit port (and in CPython's stand-in) ticks wrap
# at 2**30, so 1 s before a wrap; the 64-bit port wraps at 2**62, so far from it.
START = {32: (1 << 30) - 1_000_000, 64: 1_000_000}


@pytest.fixture(scope="module", params=[64, 32], ids=["x64", "i386"])
def inputs(request, tmp_path_factory):
    """(folder, config, compiled, bits): the scenario's inputs for one port size."""
    bits = request.param
    cfg, compiled = fwtools.compile_config()
    d = tmp_path_factory.mktemp(f"unix{bits}-in")
    (d / "config.lbcf").write_bytes(cfg)
    (d / "frames.bin").write_bytes(fwtools.encode_frames(fwtools.synth_frames(compiled, 16000,
                                                                             start=START[bits])))
    return d, cfg, compiled, bits


def unix_scenario(d, params, tmp_path, lib=None, heap="4M", bits=64):
    """mp_scenario.py on the unix port, recording into a real file. The heap
    holds the 16,000 parsed input frames (~2 MB), not just the writer."""
    ind = tmp_path / "in"
    ind.mkdir(exist_ok=True)
    for name in ("config.lbcf", "frames.bin"):
        if not (ind / name).exists():
            (ind / name).symlink_to(d / name)
    (ind / "params.json").write_text(json.dumps(dict(params, sink="file")))
    r = mpreal.run_unix(HERE / "mp_scenario.py", ind, tmp_path, heap=heap, lib=lib, bits=bits)
    return fwtools.result_line(r.stdout), (tmp_path / "rec.logb").read_bytes()


# segment sizes, durability, routing and page sizes that exercise rotation and every seal path
PARAMS = [
    {"segment_bytes": 48000, "cfg_path": True},
    {"segment_bytes": 30000, "durability": "segment", "mirror": True, "flush_ms": 250},
    {"segment_bytes": 70000, "page": 1024, "stream_bytes": 1024, "durability": "close", "cfg_path": True},
]
IDS = ["frame", "segment-mirror", "close-1k"]


@pytest.mark.parametrize("params", PARAMS, ids=IDS)
def test_same_bytes_as_cpython(inputs, params, tmp_path):
    """Codec none: the unix port writes, into a file, the bytes CPython writes."""
    d, cfg, _, bits = inputs
    res, mp = unix_scenario(d, dict(params, lock=False), tmp_path, bits=bits)
    assert res["crc"] == "c" and res["errors"] == 0
    assert mp == fwtools.cpython_bytes(d, cfg, params)
    f = logb.LogbFile(mp)
    assert f.report.clean and f.sessions[0].ended
    if params.get("mirror"):  # every frame in the raw bus stream, routed ones also in their message stream
        assert f.stream("can0").records == 16000
    else:
        assert sum(s.records for s in f.streams.values()) == 16000 + 16000 // 64


@pytest.mark.parametrize("params", PARAMS, ids=IDS)
def test_steady_state_runs_with_the_heap_locked(inputs, params, tmp_path):
    """14,000 frames after warm-up (appends, poll(), sensor pend/finish, DATA
    frames sealed and written to the file, segment rotations) run under
    micropython.heap_lock(), and still write CPython's bytes."""
    d, cfg, _, bits = inputs
    res, mp = unix_scenario(d, params, tmp_path, bits=bits)
    assert res["locked_ok"], "a steady-state call allocated (MemoryError under heap_lock)"
    assert res["data_frames"] >= 150 and res["rotations"] >= 3
    assert mp == fwtools.cpython_bytes(d, cfg, params)


def test_from_py_sources_same_bytes(inputs, tmp_path):
    """The package as .py (compiled on the board, no viper-from-.mpy): same
    bytes, steady state locked too."""
    d, cfg, _, bits = inputs
    params = {"segment_bytes": 48000, "cfg_path": True}
    res, mp = unix_scenario(d, params, tmp_path, lib=fwload.FIRMWARE, bits=bits)
    assert res["locked_ok"] and mp == fwtools.cpython_bytes(d, cfg, params)


LOCKED_PATHS = ["raw_bus", "per_message", "sensor_pend_finish", "sensor_append", "loss_counters", "anchors",
                "poll", "flush", "segment_rotation"]


@pytest.fixture(scope="module")
def locked_run(inputs, tmp_path_factory):
    d, _, compiled, bits = inputs
    out = tmp_path_factory.mktemp(f"unix{bits}-locked")
    msgs = [[e.frame_id, e.extended, e.payload_len] for e in compiled.entries if not e.mux]
    (out / "messages.json").write_text(json.dumps(msgs))
    r = mpreal.run_unix(HERE / "mp_locked.py", d / "config.lbcf", out / "messages.json", out, heap="1M", bits=bits)
    return fwtools.result_line(r.stdout), out


@pytest.mark.parametrize("path", LOCKED_PATHS)
def test_path_allocates_nothing(locked_run, path):
    """Each steady-state path in its own section under heap_lock, after one
    unlocked warm-up: no MemoryError, and the section did its work."""
    res, _ = locked_run
    assert res[path]["ok"], f"{path} allocated under heap_lock"
    assert res[path]["did"] > 0, f"{path} ran but did not get to its work: {res[path]}"


@pytest.mark.parametrize("path", LOCKED_PATHS)
def test_locked_path_recording_reads_back(locked_run, path):
    """What each locked section wrote decodes clean on the host, with what it counted."""
    res, out = locked_run
    if not res[path]["ok"]:
        pytest.fail(f"{path} allocated: its recording was interrupted")
    f = logb.LogbFile((out / f"{path}.logb").read_bytes())
    assert f.report.clean and f.sessions[0].ended and res["totals"]["errors"] == 0
    if path == "anchors":
        assert len(f.sessions[0].anchors) == 250  # 50 warm-up + 200 locked
    elif path == "loss_counters":
        t = res["totals"]
        assert t["lost_controller"] == t["expected"]["controller"] and t["lost_buffer"] == t["expected"]["buffer"]
        assert t["lost_buffer"] > 1 << 30
        meta = f.stream("can0").meta  # the final counters, as the host reads them
        assert meta["logb.lost.controller"] == str(t["lost_controller"])
        assert meta["logb.lost.buffer"] == str(t["lost_buffer"])
    elif path == "segment_rotation":
        assert len(f.segments) > res[path]["did"] >= 5


FAULT_PATHS = ["sink_raises", "sink_raises_prealloc", "sink_short"]


@pytest.mark.parametrize("path", FAULT_PATHS)
def test_sink_fault_handling_allocates_nothing(locked_run, path):
    """A sink failing every 50th write (raising an exception made under the lock, raising one it
    holds, writing half): the writer's handling (count, resynchronise) allocates nothing."""
    res, _ = locked_run
    assert res[path]["ok"], f"{path}: the writer's fault handling allocated under heap_lock"
    assert res[path]["did"] >= 4, f"{path}: the failures did not each start a segment: {res[path]}"


@pytest.mark.parametrize("path", FAULT_PATHS)
def test_sink_fault_recording_states_its_loss(locked_run, path):
    """What the failing sink took reads back with the writer's count of what it did not take in
    logb.lost.sink (END's session_bytes agrees with it), and every segment after a failure reads:
    only the frames a failed write cut are lost."""
    res, out = locked_run
    r = res[path]
    if not r["ok"]:
        pytest.fail(f"{path} allocated: its recording was interrupted")
    f = logb.LogbFile((out / f"{path}.logb").read_bytes())
    f.validate()
    se = f.sessions[0]
    assert r["lost_sink"] > 0 and r["errors"] > 0
    assert se.meta["logb.lost.sink"] == str(r["lost_sink"]) and se.ended
    assert not [n for n in f.report.notes if "session_bytes" in n.message]
    got = sum(s.records for s in f.streams.values())
    assert 0 < got < r["records"]
    lost_frames = r["records"] - got
    # a failed 512-byte page holds at most ~a page of records, and cuts one frame before it
    assert lost_frames <= r["errors"] * (512 // 9 + 64)


@pytest.mark.parametrize("policy", ["frame", "segment", "close"])
def test_durability_promises_on_the_port(locked_run, policy):
    """On MicroPython, heap locked, after every poll(): "frame" has written and flushed all it was
    given; "segment"/"close" have written every full page, flushed at each SYNC / not before close;
    a sparse stream's frame is sealed within 1.25 * flush_ms + the 1 ms poll interval."""
    res, _ = locked_run
    r = res["durability_" + policy]
    assert r["ok"], f"{policy}: allocated under heap_lock"
    assert r["did"] >= 3 and r["bad"] == 0, r
    assert 100000 <= r["worst_us"] <= 126000, r


def synth_dbc(n, path):
    """A DBC of n 8-byte messages, one signal each (the RAM sweep's configs)."""
    lines = ['VERSION ""', "", "NS_ :", "", "BS_:", "", "BU_: ECU", ""]
    for i in range(n):
        lines += [f"BO_ {0x100 + i} M{i}: 8 ECU", f' SG_ S{i} : 0|16@1+ (1,0) [0|65535] "" Vector__XXX', ""]
    path.write_text("\n".join(lines) + "\n")
    return path


def ram_run(tmp_path, n, heap, bits=32, lib=None):
    """mp_ram.py for n message streams (n=20: the shared bench DBC) under a heap cap,
    on the 32-bit port (a board's object sizes) unless told otherwise; from .mpy
    (viper for that port's arch) unless `lib` says which package folder."""
    if n == 20:
        cfg, compiled = fwtools.compile_config()
    else:
        cfg, compiled = fwtools.compile_config(dbc=synth_dbc(n, tmp_path / f"m{n}.dbc"))
    (tmp_path / f"c{n}.lbcf").write_bytes(cfg)
    msgs = [[e.frame_id, e.extended, e.payload_len] for e in compiled.entries if not e.mux]
    assert len(msgs) == n
    (tmp_path / f"m{n}.json").write_text(json.dumps(msgs))
    r = mpreal.run_unix(HERE / "mp_ram.py", tmp_path / f"c{n}.lbcf", tmp_path / f"m{n}.json", heap=heap, bits=bits,
                        lib=lib)
    return fwtools.result_line(r.stdout)


def kib(heap):
    return int(heap[:-1]) << 10


# Issue 15's RAM goal is a 32-bit board's: 20 message streams + the raw bus stream in a
# 64 KiB heap, a hard cap, from .mpy. The i386 unix port has a board's object sizes (on
# x86-64 every slot is 8 bytes: the package from .mpy holds ~47 KiB after import there and
# the 20-stream writer ~33 KiB more, so its cap is 128K).
FITS = {32: "64K", 64: "128K"}


@pytest.mark.parametrize("bits", [32, 64])
def test_ram_20_message_streams(tmp_path, bits):
    """The 20 message streams of the shared bench DBC plus the raw bus stream, from
    .mpy under a hard heap cap (64K on the 32-bit port): start-up fits, and 6,000
    frames with a segment every 20,000 bytes (SCHEMAs restated from the config
    file) run with the heap locked."""
    ram = ram_run(tmp_path, 20, FITS[bits], bits)
    assert ram["memory_error"] is None and ram["streams"] == 21, ram
    assert ram["heap"] <= kib(FITS[bits])
    print(f"RAM {bits}-bit .mpy: interpreter {ram['base']} B, code {ram['code'] - ram['base']} B, "
          f"writer state {ram['writer'] - ram['inputs']} B, live total {ram['writer']} B of {ram['heap']} B "
          f"({ram['headroom']} B free), start-up allocated {ram['init_peak']} B")
    assert ram["steady_locked_ok"], "the steady state allocated (MemoryError under heap_lock)"
    assert ram["frames"] > 100 and ram["segments"] > 5


@pytest.mark.parametrize("bits, n", [(32, 50), (64, 20), (64, 50)])
def test_a_config_that_does_not_fit_fails_with_memory_error(tmp_path, bits, n):
    """Too many streams for the heap (50 at the 32-bit port's 64K; 20 at 64K and
    50 at 128K on x86-64): the writer's start-up raises MemoryError, caught as
    such (it must not pass by growing the heap: -X heapsize is a hard cap)."""
    heap = "64K" if n == 20 else FITS[bits]
    ram = ram_run(tmp_path, n, heap, bits)
    assert ram["memory_error"] == "writer", ram
    assert ram["heap"] <= kib(heap)


# From .py the board compiles the package at import: compiling writer.py is the peak,
# beyond 116 KiB on the 32-bit port (what it then holds is the .mpy figure plus ~0.6 KiB).
PY_FITS = "120K"


def test_ram_from_py_sources(tmp_path):
    """The .py budget on the 32-bit port: `import logb` alone fails at 64K (and
    at 116K); at 120K the 20-stream writer starts and runs locked."""
    for heap in ("64K", "116K"):
        ram = ram_run(tmp_path, 20, heap, lib=fwload.FIRMWARE)
        assert ram["memory_error"] == "import", (heap, ram)
    ram = ram_run(tmp_path, 20, PY_FITS, lib=fwload.FIRMWARE)
    assert ram["memory_error"] is None and ram["steady_locked_ok"], ram
    print(f"RAM 32-bit .py: interpreter {ram['base']} B, code {ram['code'] - ram['base']} B, "
          f"live total {ram['writer']} B ({ram['headroom']} B free of {ram['heap']} B)")


def test_ram_sweep(tmp_path):
    """Live heap by message streams (1, 5, 20, 50, plus the raw bus stream) on the
    32-bit port: the writer's state grows with the streams and nothing else."""
    rows = {n: ram_run(tmp_path, n, "256K") for n in (1, 5, 20, 50)}
    for n, r in rows.items():
        assert r["memory_error"] is None and r["streams"] == n + 1, r
        print(f"RAM 32-bit .mpy, {n} message streams: writer state {r['writer'] - r['inputs']} B, "
              f"live {r['writer']} B, start-up allocated {r['init_peak']} B")
    per = [(rows[b]["writer"] - rows[b]["inputs"] - rows[a]["writer"] + rows[a]["inputs"]) / (b - a)
           for a, b in ((1, 5), (5, 20), (20, 50))]
    assert all(500 < p < 2000 for p in per), per  # a 512-byte frame buffer and its stream, per message


def test_crc_three_forms_match_the_host(tmp_path):
    """crc.select("pure" | "viper" | "c"): each form, updated piece by piece at
    odd split points, gives the host's CRC-32C over random buffers."""
    import random
    import struct

    from logb.crc import crc32c

    rnd = random.Random(15)
    blob, want = bytearray(), []
    for n in [0, 1, 3, 4, 5, 7, 8, 31, 64, 255, 1000, 4099] + [rnd.randrange(1, 3000) for _ in range(20)]:
        data = rnd.randbytes(n)
        cuts = sorted(rnd.randrange(n + 1) for _ in range(rnd.randrange(6))) if n else []
        blob += struct.pack("<IB", n, len(cuts)) + struct.pack(f"<{len(cuts)}I", *cuts) + data
        want.append(f"{crc32c(data):08x}")
    (tmp_path / "bufs.bin").write_bytes(blob)
    res = fwtools.result_line(mpreal.run_unix(HERE / "mp_crc.py", tmp_path / "bufs.bin", heap="1M").stdout)
    for form in ("pure", "viper", "c"):
        assert res[form]["backend"] == form
        assert res[form]["crcs"] == want, form
    assert res["c"]["is_logbc"] and not res["viper"]["is_logbc"] and not res["pure"]["is_logbc"]


@pytest.mark.parametrize("form", ["pure", "viper", "c"])
def test_recording_with_each_crc_form(inputs, tmp_path, form):
    """A recording written with each CRC form: CPython's bytes, every frame's
    CRC checked by the host reader (clean)."""
    d, cfg, _, bits = inputs
    params = {"segment_bytes": 48000, "cfg_path": True, "lock": False, "crc": form}
    res, mp = unix_scenario(d, params, tmp_path, bits=bits)
    assert res["crc"] == form
    assert mp == fwtools.cpython_bytes(d, cfg, params)
    assert logb.LogbFile(mp).report.clean


def test_mip_package_json_installs(tmp_path):
    """firmware/package.json lists every module; installing what it lists (as
    mip does, paths relative to the package.json) gives a package that runs
    from .py, with the C CRC this port has built in."""
    import shutil

    pkg = json.loads((fwtools.FIRMWARE / "package.json").read_text())
    listed = {dst for dst, src in pkg["urls"]}
    assert listed == {f"logb/{p.name}" for p in (fwtools.FIRMWARE / "logb").glob("*.py")}
    assert pkg["version"] == fwload.load().__version__
    target = tmp_path / "lib"
    for dst, src in pkg["urls"]:
        (target / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fwtools.FIRMWARE / src, target / dst)
    script = tmp_path / "t.py"
    script.write_text("import io, json, logb\nfrom logb import crc, link\n"
                      "w = logb.Writer(io.BytesIO(), session='0' * 32)\nw.close()\n"
                      "print('RESULT ' + json.dumps({'backend': crc.backend, 'version': logb.__version__}))\n")
    res = fwtools.result_line(mpreal.run_unix(script, heap="256K", lib=target).stdout)
    assert res == {"backend": "c", "version": pkg["version"]}
    manifest = (fwtools.FIRMWARE / "manifest.py").read_text()
    for name in listed:
        assert f'"{name.split("/")[1]}"' in manifest


def test_no_firmware_class_has_a_special_accessor():
    """No class of the package has a property, a descriptor or __setattr__: on
    MicroPython one such member makes every attribute store on the class's
    instances look through the class first (~1,170 Cortex-M3 instructions a
    store instead of ~140). Computed attributes go through __getattr__."""
    import inspect

    found = []
    for name in fwload.MODULES:
        if name == "crc_viper":  # viper code: MicroPython only, and it has no class
            continue
        mod = fwload.submodule(name)
        for cname, cls in vars(mod).items():
            if not inspect.isclass(cls) or cls.__module__ != mod.__name__:
                continue
            for attr, v in vars(cls).items():
                if attr in ("__setattr__", "__delattr__") or not attr.startswith("__") and (
                        isinstance(v, property) or hasattr(type(v), "__set__")):
                    found.append(f"{name}.{cname}.{attr}")  # (CPython's own __dict__/__weakref__ aside)
    assert not found


def malformed(cfg):
    """LBCF configs broken one way each (fwtools' 20-message config underneath)."""
    count = int.from_bytes(cfg[6:8], "little")
    return {"magic": b"LBCX" + cfg[4:], "version": cfg[:4] + b"\x02\x00" + cfg[6:], "cut header": cfg[:6],
            "entry past the end": cfg[:6] + (count + 1).to_bytes(2, "little") + cfg[8:],
            "schema past the end": cfg[:-1], "bytes after": cfg + b"\x00",
            "no entry": cfg[:6] + b"\x00\x00", "entry 0 not raw": cfg[:16] + b"\x01" + cfg[17:]}


@pytest.mark.parametrize("how", list(malformed(b"\x00" * 8)))
def test_a_malformed_config_declares_nothing(tmp_path, how):
    """The config is checked whole (a first pass over its headers) before any stream
    is declared, whether given as bytes or a path; a path is not left open."""
    fw = fwload.load()
    bad = malformed(fwtools.compile_config()[0])[how]
    (tmp_path / "bad.lbcf").write_bytes(bad)
    for src in (bad, str(tmp_path / "bad.lbcf")):
        w = fw.Writer(io.BytesIO(), session="6" * 32)
        with pytest.raises(ValueError):
            w.load_config(src)
        assert w.streams == [] and w._cfg is None


@pytest.mark.parametrize("schemas", ["flash", "ram"])
def test_config_as_path_file_or_bytes_same_recording(inputs, schemas):
    """load_config(path | open file | bytes): the same streams and the same bytes
    (a SCHEMA restated from the file equals the one kept in RAM)."""
    d, cfg, _, _ = inputs
    fw = fwload.load()
    out = []
    for kind in ("path", "file", "bytes"):
        sink = io.BytesIO()
        w = fw.Writer(sink, session="7" * 32, ticks=lambda: 5, segment_bytes=4000)
        with open(d / "config.lbcf", "rb") as f:
            src = {"path": str(d / "config.lbcf"), "file": f, "bytes": cfg}[kind]
            streams = w.load_config(src, schemas=schemas)
            assert (w._cfg is not None) == (kind == "path" and schemas == "flash")
            for i in range(400):
                w.append_can(5, 0x7F5, bytes(i % 9))  # the raw bus stream: rotations restate every SCHEMA
            w.close()
        out.append((len(streams), sink.getvalue()))
    assert out[0] == out[1] == out[2] and out[0][0] == 21
    assert len(logb.LogbFile(out[0][1]).segments) > 3
