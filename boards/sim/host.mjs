// The simulated board: real MicroPython (the WebAssembly port, npm package
// @micropython/micropython-webassembly-pyscript, pinned by
// tools/setup.d/30-firmware.sh) in Node.js, with
//   - the firmware package mounted at /lib (its .py or precompiled .mpy files),
//   - an SD card that is a host file (writes go straight to it with
//     fs.writeSync; flush() is fsync), optionally cut into random small
//     writes so that a kill lands anywhere inside a frame,
//   - a CAN controller replaying a candump trace into a receive ring in the
//     board's RAM, at real time (x speed) or as fast as the writer takes it,
//   - a microsecond tick counter: real time, or the replayed trace's time.
// Python reaches it as `import simhw`. Used by boards/sim/run.py (the demo,
// the power-cut tests) and by the firmware tests (tests/firmware/).
//
// node host.mjs --script FILE.py [--script ...] [--lib DIR] [--heap BYTES] [--sd PATH]
//     [--durable-log PATH] [--chunk N] [--sd-ns-per-byte NS] [--seed N] [--trace PATH] [--speed X]
//     [--limit N] [--put HOST:MEM]... [--get MEM:HOST]... [--set KEY=VALUE]...
//     [--serial TTY] [--files DIR]   (the serial link, issue 6: see "serial link" below)
// Exit status: 0 done, 1 Python exception (printed), 2 usage.

import fs from "fs";
import path from "path";
import url from "url";

const HERE = path.dirname(url.fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");

function usage(msg) {
  console.error(`host.mjs: ${msg}`);
  process.exit(2);
}

const opt = { scripts: [], put: [], get: [], set: {}, chunk: 0, sdNs: 0, seed: 1, speed: 0, limit: 0, heap: 64 * 1024 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
  if (a === "--script") opt.scripts.push(val());
  else if (a === "--lib") opt.lib = val();
  else if (a === "--heap") opt.heap = parseInt(val(), 10);
  else if (a === "--sd") opt.sd = val();
  else if (a === "--durable-log") opt.durable = val();
  else if (a === "--chunk") opt.chunk = parseInt(val(), 10);
  else if (a === "--sd-ns-per-byte") opt.sdNs = parseFloat(val());
  else if (a === "--seed") opt.seed = parseInt(val(), 10);
  else if (a === "--trace") opt.trace = val();
  else if (a === "--speed") opt.speed = parseFloat(val());
  else if (a === "--limit") opt.limit = parseInt(val(), 10);
  else if (a === "--put") opt.put.push(val());
  else if (a === "--get") opt.get.push(val());
  else if (a === "--set") { const [k, ...v] = val().split("="); opt.set[k] = v.join("="); }
  else if (a === "--serial") opt.serial = val();  // serial link (issue 6): see the block before "run"
  else if (a === "--files") opt.files = val();
  else usage(`unknown argument ${a}`);
}
if (!opt.scripts.length) usage("--script is required");

function micropythonPath() {
  const candidates = [
    process.env.LOGB_MICROPYTHON_MJS,
    path.join(ROOT, ".venv", "fw", "node", "node_modules", "@micropython", "micropython-webassembly-pyscript", "micropython.mjs"),
    path.join(ROOT, "firmware", "node_modules", "@micropython", "micropython-webassembly-pyscript", "micropython.mjs"),
  ];
  for (const c of candidates) if (c && fs.existsSync(c)) return c;
  usage("MicroPython for Node not found: run ./run test (tools/setup.d/30-firmware.sh) or set LOGB_MICROPYTHON_MJS");
}

// The wasm memory: captured when the module instantiates (the module does not export HEAPU8).
let memory = null;
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async function (...args) {
  const r = await instantiate.apply(this, args);
  const inst = r.instance || r;
  memory = Object.values(inst.exports).find((x) => x instanceof WebAssembly.Memory) || memory;
  return r;
};
const bytesAt = (addr, n) => new Uint8Array(memory.buffer, addr, n);

// A small deterministic PRNG (mulberry32) for write chunking.
let rng = opt.seed >>> 0;
function random() {
  rng = (rng + 0x6d2b79f5) >>> 0;
  let t = rng;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

// ---------------------------------------------------------------- SD card
let sdFd = null, sdBytes = 0, durableFd = null;
if (opt.sd) sdFd = fs.openSync(opt.sd, "w");
if (opt.durable) durableFd = fs.openSync(opt.durable, "w");

function sdWrite(addr, n) {
  if (sdFd === null) throw new Error("no --sd file");
  const src = bytesAt(addr, n);
  let done = 0;
  while (done < n) {
    const k = opt.chunk > 0 ? Math.min(n - done, 1 + Math.floor(random() * opt.chunk)) : n - done;
    const w = fs.writeSync(sdFd, src, done, k);
    done += w;
    if (opt.sdNs > 0) {  // a slow card: the write takes time, so a cut can land inside it
      const until = performance.now() + (w * opt.sdNs) / 1e6;
      while (performance.now() < until) { /* busy: the board is blocked in the driver */ }
    }
  }
  sdBytes += n;
  return n;
}

function sdFlush() {
  if (sdFd === null) return;
  fs.fsyncSync(sdFd);
  // Written only after fsync returned: every offset in this log is durable.
  if (durableFd !== null) fs.writeSync(durableFd, `${sdBytes}\n`);
}

// ---------------------------------------------------------------- CAN replay
const TICKS_MASK = (1 << 30) - 1;
let frames = [];  // [t_us (relative), id, flags, Uint8Array]
let traceStartUs = 0;  // µs since 1970 of the first frame
if (opt.trace) {
  const text = fs.readFileSync(opt.trace, "utf8");
  let t0 = null;
  for (const line of text.split("\n")) {
    const m = /^\((\d+)\.(\d+)\)\s+\S+\s+([0-9A-Fa-f]+)#(R?)([0-9A-Fa-f]*)/.exec(line);
    if (!m) continue;
    const us = parseInt(m[1], 10) * 1e6 + parseInt(m[2].padEnd(6, "0").slice(0, 6), 10);
    if (t0 === null) { t0 = us; traceStartUs = us; }
    const id = parseInt(m[3], 16);
    let flags = m[3].length > 3 ? 1 : 0;
    if (m[4]) flags |= 2;
    const data = Uint8Array.from(Buffer.from(m[5], "hex"));
    frames.push([us - t0, id, flags, data]);
    if (opt.limit && frames.length >= opt.limit) break;
  }
}
let next = 0;
const T_START = 1 << 29;  // the replay's first tick: half a period before the first wrap
const wallStart = performance.now();
let virtualNow = 0;  // µs since the start of the replay

function nowUs() {
  if (opt.speed > 0) return Math.floor((performance.now() - wallStart) * 1000 * opt.speed);
  return virtualNow;
}

// Fill up to `slots` frames of `size` bytes each at addr:
// u32 ticks, u32 id, u8 flags, u8 length, 2 reserved, data[size - 12].
function canFill(addr, slots, size) {
  const now = nowUs();
  const view = new DataView(memory.buffer, addr, slots * size);
  const mem = bytesAt(addr, slots * size);
  let k = 0;
  while (k < slots && next < frames.length) {
    const [t, id, flags, data] = frames[next];
    if (opt.speed > 0 && t > now) break;
    const o = k * size;
    view.setUint32(o, (T_START + t) & TICKS_MASK, true);
    view.setUint32(o + 4, id, true);
    mem[o + 8] = flags;
    mem[o + 9] = data.length;
    mem.set(data.subarray(0, size - 12), o + 12);
    if (opt.speed <= 0) virtualNow = t;
    next++;
    k++;
  }
  return k;
}

// CRC-32C in JavaScript over the board's RAM: a stand-in for a native CRC
// (the cbridge C module or the viper loop on a real board) in benchmarks.
const CRC_TABLE = new Uint32Array(256);
for (let b = 0; b < 256; b++) {
  let c = b;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  CRC_TABLE[b] = c >>> 0;
}
function crcUpdate(addr, n, stAddr) {  // st: array('I', [low 24 bits, high 8 bits])
  const st = new Uint32Array(memory.buffer, stAddr, 2);
  const p = bytesAt(addr, n);
  let c = (st[0] | (st[1] << 24)) >>> 0;
  for (let i = 0; i < n; i++) c = CRC_TABLE[(c ^ p[i]) & 0xff] ^ (c >>> 8);
  st[0] = c & 0xffffff;
  st[1] = c >>> 24;
}

const simhw = {
  crc32c_update: crcUpdate,
  sd_write: sdWrite,
  sd_flush: sdFlush,
  sd_bytes: () => sdBytes,
  can_fill: canFill,
  can_done: () => next >= frames.length,
  can_count: () => frames.length,
  ticks_us: () => (T_START + nowUs()) & TICKS_MASK,
  realtime: () => opt.speed > 0,
  elapsed_us: () => String(nowUs()),  // strings: JS numbers cross as 32-bit ints
  trace_start_us: () => String(traceStartUs),
  arg: (k, d) => (k in opt.set ? opt.set[k] : d === undefined ? null : d),
  log: (s) => process.stdout.write(`${s}\n`),
  wall_ms: () => Date.now(),
  perf_us: () => Math.round(performance.now() * 1000) & TICKS_MASK,  // µs, for benchmarks (ticks_us is ms-grained here)
};

// ---------------------------------------------------------------- serial link (issue 6)
// --serial PATH: a tty (one end of a pseudo-terminal pair) that is the
// board's USB serial port (or fd:N, an inherited non-blocking descriptor); firmware/logb/link.py speaks over it through
// serial_read/serial_write (non-blocking: 0 = nothing now, -1 = port gone).
// --files DIR: the SD card's directory as the link sees it (default: the
// directory of --sd): list, size, read and remove the recordings in it.
// sd_durable(): bytes of the --sd file at its last flush (a frame boundary).
let serialFd = null, sdDurable = 0;
const filesDir = opt.files || (opt.sd ? path.dirname(path.resolve(opt.sd)) : null);
const fileFds = new Map();
if (opt.serial && opt.serial.startsWith("fd:")) {
  serialFd = parseInt(opt.serial.slice(3), 10);  // an inherited descriptor (a pty master), set non-blocking by the parent
} else if (opt.serial) {
  const c = fs.constants;
  serialFd = fs.openSync(opt.serial, c.O_RDWR | c.O_NOCTTY | c.O_NONBLOCK);
}
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function serialIo(write, addr, n) {
  if (serialFd === null) return -1;
  try {
    return write ? fs.writeSync(serialFd, bytesAt(addr, n), 0, n) : fs.readSync(serialFd, bytesAt(addr, n), 0, n, null);
  } catch (e) {
    if (e.code === "EAGAIN" || e.code === "EWOULDBLOCK") return 0;
    return -1;
  }
}
function fileFd(name) {
  if (!fileFds.has(name)) fileFds.set(name, fs.openSync(path.join(filesDir, name), "r"));
  return fileFds.get(name);
}
function dropFd(name) {
  if (fileFds.has(name)) { try { fs.closeSync(fileFds.get(name)); } catch (e) { /* gone */ } fileFds.delete(name); }
}
Object.assign(simhw, {
  sd_flush: () => { sdFlush(); sdDurable = sdBytes; },
  sd_durable: () => String(sdDurable),
  sd_name: () => (opt.sd ? path.basename(opt.sd) : ""),
  serial_read: (addr, n) => serialIo(false, addr, n),
  serial_write: (addr, n) => serialIo(true, addr, n),
  sleep_ms: (ms) => { Atomics.wait(sleepCell, 0, 0, ms); },
  files_list: () => JSON.stringify(filesDir === null ? [] : fs.readdirSync(filesDir).filter((n) => n.endsWith(".logb")).sort()),
  files_size: (name) => {
    try { return String(fs.statSync(path.join(filesDir, name)).size); } catch (e) { dropFd(name); return "-1"; }
  },
  files_read: (name, pos, addr, n) => {
    try { return fs.readSync(fileFd(name), bytesAt(addr, n), 0, n, Number(pos)); } catch (e) { dropFd(name); return -1; }
  },
  files_close: (name) => { dropFd(name); },
  files_remove: (name) => {
    dropFd(name);
    try { fs.unlinkSync(path.join(filesDir, name)); return 0; } catch (e) { return -1; }
  },
});

// ---------------------------------------------------------------- run
const { loadMicroPython } = await import(url.pathToFileURL(micropythonPath()).href);
const out = [];
const mp = await loadMicroPython({
  heapsize: opt.heap,
  stdout: (s) => process.stdout.write(s + "\n"),
  stderr: (s) => process.stderr.write(s + "\n"),
});
mp.registerJsModule("simhw", simhw);

function mkdirs(p) {
  const parts = p.split("/").filter(Boolean);
  let cur = "";
  for (const part of parts) {
    cur += "/" + part;
    try { mp.FS.mkdir(cur); } catch (e) { /* exists */ }
  }
}
function putTree(hostDir, memDir) {
  mkdirs(memDir);
  for (const name of fs.readdirSync(hostDir)) {
    const h = path.join(hostDir, name);
    if (fs.statSync(h).isDirectory()) {
      if (name !== "__pycache__") putTree(h, `${memDir}/${name}`);
    } else if (name.endsWith(".py") || name.endsWith(".mpy")) {
      mp.FS.writeFile(`${memDir}/${name}`, fs.readFileSync(h));
    }
  }
}
putTree(opt.lib || path.join(ROOT, "firmware", "logb"), "/lib/logb");
for (const spec of opt.put) {
  const i = spec.lastIndexOf(":");
  const host = spec.slice(0, i), mem = spec.slice(i + 1);
  mkdirs(path.posix.dirname(mem));
  mp.FS.writeFile(mem, fs.readFileSync(host));
}

for (const spec of opt.get) mkdirs(path.posix.dirname(spec.slice(0, spec.indexOf(":"))));

// Each --script is one runPython call: the garbage collector runs only when
// control is back in JavaScript, i.e. between scripts.
let status = 0;
for (const script of opt.scripts) {
  try {
    mp.runPython(fs.readFileSync(script, "utf8"));
  } catch (e) {
    if (e.name !== "PythonError") throw e;
    if (e.type !== "SystemExit") {
      console.error(`${e.type}: ${e.message}`);
      status = 1;
    }
    break;
  }
}
for (const spec of opt.get) {
  const i = spec.indexOf(":");
  const mem = spec.slice(0, i), host = spec.slice(i + 1);
  try { fs.writeFileSync(host, mp.FS.readFile(mem)); } catch (e) { console.error(`cannot get ${mem}: ${e}`); status = status || 1; }
}
if (sdFd !== null) fs.closeSync(sdFd);
if (durableFd !== null) fs.closeSync(durableFd);
process.exit(status);
