"""The device writer: Logb v0.1 (docs/SPEC.md) on flash or SD, append-only,
no allocation per record.

Layout of the work, all in buffers preallocated at start:

- one buffer per stream holds its DATA frame being built: 8-byte frame
  header, 28-byte DATA header, records, 4-byte CRC. A record is packed in
  place with one `struct.pack_into` (`t` = u32 ticks since the frame's
  axis_base, µs, then the payload);
- when a stream's buffer is full, or its oldest record is `flush_ms` old,
  the frame is sealed (headers, CRC-32C) and copied into the page buffer;
- the page buffer goes to the sink in page-sized writes; the durability
  policy decides when a partial page is handed over and `flush()`ed too.

Time: records carry `time.ticks_us()` readings (or any counter with the
same period passed as `ticks`). The counter wraps every 2**30 µs (17.9 min);
the writer unwraps it to 64 bits by counting wraps, so each DATA frame's
axis_base is the true µs count since boot. Call `poll()` from the main loop
(at least every few minutes; normally every few ms) so wraps are seen and
idle streams' frames go out within `flush_ms`.
"""

from . import crc as _crc
from ._port import MICROPYTHON, PERIOD_30, TICKS_PERIOD, TICKS_PERIOD_M1, pack_into, Deflater, hexlify, random_bytes, ticks_add, ticks_diff, ticks_us
from .config import (EXCLUSIVE, KIND_BRANCH, KIND_MESSAGE, KIND_RAW, MIRROR, check_schema, flip_uuid, raw_routing,
                     read, selects)

try:
    from micropython import const
except ImportError:  # CPython
    from ._const import const

FIRMWARE = "logb-micropython 0.1.0"

_HDR = const(36)  # frame header (8) + DATA header (28): records start here
_FT_SYNC = const(0x01)
_FT_SCHEMA = const(0x10)
_FT_META = const(0x11)
_FT_ATTACH = const(0x12)
_FT_DATA = const(0x20)
_FT_END = const(0x40)
_EXT_KEY = const(0x20000000)  # extended ids: key = id | 1 << 29 (a small int)
_CODEC_DEFLATE = const(3)
_KIND_SENSOR = const(-1)
_PM1 = TICKS_PERIOD_M1  # TICKS_PERIOD - 1: a small int on every port

DUR_FRAME = "frame"
DUR_SEGMENT = "segment"
DUR_CLOSE = "close"

MAGIC = b"\x89LOGB\r\n\x1a"
SYNC_PATTERN = b"LOGBSYNC\xa7\x3e\x91\xd2\x5c\x68\x0b\xf4"
_K_CTRL = b"logb.lost.controller"
_K_BUF = b"logb.lost.buffer"
# DLC code of an n-byte payload (CAN FD lengths round up to the next code).
_LEN2DLC = bytes([n if n <= 8 else 9 if n <= 12 else 10 if n <= 16 else 11 if n <= 20 else 12 if n <= 24
                  else 13 if n <= 32 else 14 if n <= 48 else 15 for n in range(65)])


def _str(s):
    b = s.encode() if isinstance(s, str) else bytes(s)
    return len(b).to_bytes(4, "little") + b


def meta_payload(pairs):
    """A META payload (SPEC §4.5) from (key, value) pairs; values become text."""
    out = [len(pairs).to_bytes(4, "little")]
    for k, v in pairs:
        out.append(_str(k))
        out.append(_str(v if isinstance(v, (str, bytes)) else str(v)))
    return b"".join(out)


def frame_bytes(ftype, sid, payload):
    """A whole frame (header, payload, CRC) as a new bytearray."""
    n = len(payload)
    b = bytearray(12 + n)
    pack_into("<IBBH", b, 0, n, ftype, 0, sid)
    b[8:8 + n] = payload
    st = _crc.state()
    _crc.update(b, 0, 8 + n, st)
    _crc.store(st, b, 8 + n)
    return b


def _dec(buf, off, v):
    """Write `v` as a Logb string of decimal digits at buf[off]; returns the end."""
    n = 1
    x = v
    while x >= 10:
        x //= 10
        n += 1
    pack_into("<I", buf, off, n)
    end = off + 4 + n
    i = end
    while True:
        i -= 1
        buf[i] = 48 + v % 10
        v //= 10
        if not v:
            break
    return end


class Stream:
    """One stream: its DATA frame buffer and counters.

    Sensor records use the pend/finish split, which allocates nothing:

        off = s.pend(t)                         # t: ticks of the sample
        struct.pack_into("<hH", s.buf, off, temp, pressure)
        s.finish()

    `pend` reserves the next record (writing `t`) and returns where its
    payload starts in `s.buf`; `finish` commits it. A pend without a finish
    is simply overwritten by the next pend.
    """

    def __init__(self, w, sid, name, schema, size, cap, fmt, kind, plen, select, codec, src=None, excl=False):
        self.w = w
        self.sid = sid
        self.name = name
        frame = frame_bytes(_FT_SCHEMA, sid, schema)
        if src is None:  # the SCHEMA frame stays in RAM, in page-sized pieces
            self.chunks = w._chunks(frame)
            self.src = None
        else:  # restated from the config file: (file offset, payload length, header + CRC)
            self.chunks = ()
            self.src = (src, len(schema), bytes(frame[:8]), bytes(frame[-4:]))
        self.size = size
        self.cap = cap
        self.buf = bytearray(_HDR + cap * size + 4)
        self.off = _HDR  # where the next record goes; _HDR: the frame is empty
        self.end = _HDR + cap * size  # off at which the frame is full
        self.t0 = 0  # ticks of the frame's axis_base (its first record)
        self.e0 = 0  # wraps of the ticks counter at t0
        self.fmt = fmt
        self.kind = kind
        self.raw = kind == KIND_RAW
        # payload length a frame must have to go here alone, the fast path (SPEC §13.4
        # exclusive routing); -1: never (the raw bus stream; PGN-matched and branch
        # streams, whose frames go to the raw bus stream too; everything when mirroring)
        self.plen = plen if excl and not w._mirror else -1
        self.payload = plen
        self.select = select
        self.codec = codec
        self.lost_controller = 0
        self.lost_buffer = 0
        self.records = 0
        self.frames = 0

    @property
    def n(self):
        """Records in the frame being built."""
        return (self.off - _HDR) // self.size

    def pend(self, t):
        off = self.off
        dt = 0
        if off != _HDR:
            dt = ticks_diff(t, self.t0)
            if dt < 0 or dt >= self.w._flush_ticks:
                self.w._emit(self)
                off = _HDR
                dt = 0
        if off == _HDR:
            self.t0 = t
            self.e0 = self.w._epoch(t)
        pack_into("<I", self.buf, off, dt)
        return off + 4

    def finish(self):
        off = self.off + self.size
        self.off = off
        if off >= self.end:
            self.w._emit(self)

    def append(self, t, *values):
        """Convenience for sensor streams declared with a struct format (allocates
        the argument tuple; use pend/finish on hot paths)."""
        pack_into(self.fmt, self.buf, self.pend(t), *values)
        self.finish()

    def lost(self, controller=0, buffer=0):
        """Count frames dropped before they reached the writer (G13)."""
        self.lost_controller += controller
        self.lost_buffer += buffer


class Writer:
    """Write one Logb writer session to `sink` (anything with write(); a VFS
    file, `io.BytesIO`, a BlockSink, ...). Never seeks.

    device, firmware: `logb.device` / `logb.firmware`.
    ticks: the clock (default time.ticks_us); clock_source names it.
    page: bytes per sink write (512 = one SD sector); stream_bytes /
      raw_bytes: the DATA frame buffer of each message / the raw bus stream
      (at most `page`).
    durability: "frame" (write + flush after every frame), "segment" (at each
      SYNC) or "close"; flush_ms: a DATA frame is sealed at the latest this
      long after its first record.
    segment_bytes / segment_s: start a new segment (SYNC, every SCHEMA, the
      session META, the loss counters) after this many bytes or seconds.
    mirror: `mirror` routing (docs/SPEC.md §13.4): every CAN frame goes to the
      raw bus stream, matching data frames to their per-message stream too.
      Default, `exclusive`: a classic data frame (no flag but extended) whose
      length and DLC are its exact message's payload_len goes to that stream
      alone; every other frame to the raw bus stream (and, for a PGN match or a
      multiplexer branch, to its per-message stream too). Nothing is lost
      either way; the raw bus stream's schema says which (`logb.can.routing`).
    crc: override the CRC-32C implementation (see crc.py).
    """

    def __init__(self, sink, device="", firmware=FIRMWARE, session=None, ticks=None, clock_source=None,
                 page=512, stream_bytes=512, raw_bytes=None, durability=DUR_FRAME, flush_ms=1000,
                 segment_bytes=1 << 20, segment_s=600, header=True, mirror=False, crc=None,
                 deflate_wbits=10):
        if page < 64 or page & (page - 1):
            raise ValueError("page must be a power of two >= 64")
        if durability not in (DUR_FRAME, DUR_SEGMENT, DUR_CLOSE):
            raise ValueError("durability must be frame, segment or close")
        if not 0 < flush_ms * 1000 < (1 << 28):
            raise ValueError("flush_ms out of range")
        self._sink = sink
        try:
            sink.write(b"", 0, 0)
            self._w4 = True  # MicroPython stream: write(buf, off, n) copies nothing
        except TypeError:
            self._w4 = False
        self._flush = getattr(sink, "flush", None)
        self._ticks = ticks or ticks_us
        self._crc = crc or _crc.update
        self._cs = _crc.state()
        self._page = page
        self._out = bytearray(2 * page)
        self._pmv = memoryview(self._out)[:page]
        self._tail = memoryview(self._out)[page:]
        sizes = []
        s = 16
        while s < page:
            sizes.append(s)
            s *= 2
        sizes.append(page)
        self._sizes = tuple(sizes)
        self._fmts = tuple("%ds" % s for s in sizes)
        self._fill = 0
        self._done = 0
        self._pos_hi = 0  # bytes written, as hi * 2**24 + lo
        self._pos_lo = 0
        self._start_hi = 0
        self._start_lo = 0
        self._ctl = bytearray(160)
        self._stream_bytes = min(stream_bytes, page)
        self._raw_bytes = min(raw_bytes or page, page)
        self._dur = durability
        self._flush_ticks = flush_ms * 1000
        self._scan = self._flush_ticks // 4
        self._seg_max = segment_bytes
        self._seg_s = segment_s
        self._seg = 0
        self._seq = -1
        self._age_t = 0
        self._age_us = 0
        self._age_s = 0
        now = self._ticks()
        self._last = now
        self._wraps = 0
        self._due = now
        self._streams = []
        self._exact = {}
        self._branch = {}
        self._masked = []
        self._raw = None
        self._dflt = None  # the stream of an id not in _exact, when no entry needs a look (the raw bus)
        self._mirror = mirror
        self._next_sid = 1
        self._deflater = None
        self._deflate_wbits = deflate_wbits
        self._cfg = None  # the open config file SCHEMA payloads are restated from
        self._scratch = None
        self._zbuf = None
        self._zview = None
        self._closed = False
        self.errors = 0
        self.session = session or hexlify(random_bytes(16))
        if durability == DUR_FRAME:
            dtext = "frame;write and flush after every frame; DATA frames sealed within %d ms" % flush_ms
        elif durability == DUR_SEGMENT:
            dtext = ("segment;write and flush at every SYNC (segments of %d bytes or %d s); DATA frames sealed "
                     "within %d ms" % (segment_bytes, segment_s, flush_ms))
        else:
            dtext = "close;write and flush at close only"
        pairs = [("logb.time_base", "monotonic"), ("logb.session", self.session),
                 ("logb.clock_source", clock_source or "time.ticks_us (unwrapped to 64 bit)")]
        if device:
            pairs.append(("logb.device", device))
        if firmware:
            pairs.append(("logb.firmware", firmware))
        pairs.append(("logb.durability", dtext))
        self.durability = dtext
        self._meta = self._chunks(frame_bytes(_FT_META, 0, meta_payload(pairs)))
        if header:
            h = bytearray(16)
            h[0:8] = MAGIC
            pack_into("<HH", h, 8, 0, 1)
            _crc.begin(self._cs)
            _crc.update(h, 0, 12, self._cs)
            _crc.store(self._cs, h, 12)
            self._put(h, 16)

    # ------------------------------------------------------------ declaring streams
    def ticks(self):
        return self._ticks()

    def _chunks(self, data):
        mv = memoryview(data)
        p = self._page
        return tuple(mv[i:i + p] for i in range(0, len(data), p))

    def add_stream(self, schema, record_size, fmt=None, capacity=None, codec="none", _kind=_KIND_SENSOR,
                   _plen=0, _select=(), _sid=0, _src=None, _excl=False):
        """Declare a stream from its SCHEMA payload (bytes). Its records are
        `record_size` bytes starting with `t` (u32 µs ticks since the frame's
        axis_base: axis explicit on field 0, exp -6, scale 1). `fmt`: the
        struct format of the rest of the record, for Stream.append."""
        name = check_schema(schema, record_size)
        sid = _sid or self._next_sid
        self._next_sid = max(self._next_sid, sid + 1)
        limit = self._raw_bytes if _kind == KIND_RAW else self._stream_bytes
        cap = capacity or (limit - _HDR - 4) // record_size
        if cap < 1 or _HDR + cap * record_size + 4 > self._page:
            raise ValueError("stream %r: %d-byte records do not fit a %d-byte page" % (name, record_size, self._page))
        if codec not in ("none", "deflate"):
            raise ValueError("codec must be none or deflate")
        code = 0
        if codec == "deflate":
            code = _CODEC_DEFLATE
            self._need_deflate()
        st = Stream(self, sid, name, schema, record_size, cap, fmt, _kind, _plen, _select, code, _src, _excl)
        self._streams.append(st)
        if self._seq >= 0:  # mid-segment: bind it now, before its first DATA frame
            self._put_schema(st)
        return st

    def _need_deflate(self):
        if self._deflater is None:
            self._deflater = Deflater(self._page, self._deflate_wbits)
            self._zbuf = bytearray(self._page)
            self._zview = memoryview(self._zbuf)[_HDR:]

    def add_sensor(self, name, fields, uuid=None, device="", codec="none", capacity=None):
        """A sensor stream built on the device: fields are (name, struct code,
        unit[, offset, factor]) tuples, e.g. ("temp", "h", "degC", -40.0, 0.125).
        Records are `t` then the fields, packed little-endian in order."""
        from .schema import sensor_schema

        schema, fmt, size = sensor_schema(name, fields, uuid=uuid, device=device)
        return self.add_stream(schema, size, fmt=fmt, capacity=capacity, codec=codec)

    def load_config(self, src, codec="none", schemas="flash"):
        """Declare the CAN streams of an LBCF config (path, file or bytes).
        Entry i becomes stream_id i + 1; entries of unknown kind are skipped
        (their stream_id stays unused). Returns the streams. The raw bus
        stream's schema is set to this writer's routing (`logb.can.routing`
        and its uuid, SPEC §13.1); the compiler's config says `exclusive`.

        schemas="flash" (with a path): the SCHEMA payloads are not kept in
        RAM; the config file stays open and each segment copies them from it
        through a small buffer (no allocation). "ram": kept in RAM."""
        entries = read(src)
        from_file = schemas == "flash" and isinstance(src, str) and self._cfg is None
        if from_file:
            self._cfg = open(src, "rb")
            self._scratch = bytearray(128)
        base = self._next_sid - 1
        made = []
        for e in entries:
            sid = base + e.index + 1
            if e.kind == KIND_RAW:
                if e.index != 0 or self._raw is not None:
                    raise ValueError("one raw bus stream per writer, as LBCF entry 0")
                if e.record_size != 10 + e.payload_len:
                    raise ValueError("raw bus entry: record_size %d for %d-byte payloads" % (e.record_size, e.payload_len))
                routing = MIRROR if self._mirror else EXCLUSIVE
                schema, changed = raw_routing(e.schema, routing)
                if schema is None:  # a config from before the routing key: its uuid is the mirror one
                    from .schema import raw_schema

                    uuid = flip_uuid(e.schema) if routing == EXCLUSIVE else bytes(e.schema[0:16])
                    schema = raw_schema(uuid, check_schema(e.schema, e.record_size), e.payload_len > 8, routing)
                st = self.add_stream(schema, e.record_size, "<IIBB%ds" % e.payload_len, codec=codec,
                                     _kind=KIND_RAW, _plen=e.payload_len, _sid=sid,
                                     _src=e.offset if from_file and not changed else None)
                self._raw = st
            elif e.kind in (KIND_MESSAGE, KIND_BRANCH):
                if e.record_size < 4 + e.payload_len:
                    raise ValueError("entry %d: record_size %d < 4 + %d" % (e.index, e.record_size, e.payload_len))
                st = self.add_stream(e.schema, e.record_size, "<I%ds" % e.payload_len, codec=codec,
                                     _kind=e.kind, _plen=e.payload_len, _select=e.select, _sid=sid,
                                     _src=e.offset if from_file else None, _excl=e.exclusive())
            else:
                self._next_sid = max(self._next_sid, sid + 1)
                continue
            made.append((e, st))
        self._build_routes(made)
        return [st for _, st in made]

    def _build_routes(self, made):
        msgs = [(e, st) for e, st in made if e.kind != KIND_RAW and e.reachable]
        keys = []
        for e, _ in msgs:
            k = e.exact_key()
            if k >= 0 and k not in keys:
                keys.append(k)
        for k in keys:
            cands = []
            for e, st in msgs:
                if k & e.kmask == e.key:
                    cands.append(st)
                    if e.kind == KIND_MESSAGE:
                        break
            if cands[0].kind == KIND_MESSAGE:
                self._exact[k] = cands[0]
            else:
                self._branch[k] = tuple(cands)
        for e, st in msgs:
            if e.exact_key() < 0:
                self._masked.append((e.kmask, e.key, st))
        self._dflt = None if self._branch or self._masked else self._raw

    def _route(self, key, data):
        """The stream of a frame not in the exact-id table (branches, masks)."""
        c = self._branch.get(key)
        if c is not None:
            for st in c:
                if not st.select or selects(st.select, data, st.payload):
                    return st
            return self._raw
        for km, k, st in self._masked:
            if key & km == k and (not st.select or selects(st.select, data, st.payload)):
                return st
        return self._raw

    # ------------------------------------------------------------ the hot path
    def append_can(self, t, can_id, data, flags=0, dlc=-1):
        """One CAN frame: t = ticks at reception, can_id (11 or 29 bits), data
        (bytes-like, exact length), flags (bit 0 extended, 1 remote, 2 error,
        3 FD, 4 BRS, 5 ESI, 6 tx; docs/SPEC.md §13.1), dlc (-1: from len(data)).
        Routed (SPEC §13.4) to the first matching per-message stream alone when
        that stream rebuilds it exactly (exclusive routing), else to the raw bus
        stream, and a matching data frame to its per-message stream too unless
        that one is exact. Never raises for any frame; allocates nothing."""
        st = self._exact.get(can_id | _EXT_KEY if flags & 1 else can_id, self._dflt)
        if st is None:  # branches (multiplexers) and masked (J1939) entries
            st = self._route(can_id | _EXT_KEY if flags & 1 else can_id, data)
            if st is None:  # no config loaded: nowhere to put CAN frames
                return
        # lossless only for a classic data frame (no flag but extended) of the exact
        # stream's length and DLC; st.plen is -1 for every stream that is not exact
        if flags & 0xFE or st.plen != len(data) or (dlc >= 0 and dlc != st.plen):
            self._append_raw(t, can_id, data, flags, dlc, st)
            return
        # the per-message fast path: one pack_into per frame
        off = st.off
        if off == _HDR:
            st.t0 = t
            st.e0 = self._epoch(t)
            dt = 0
        else:
            dt = t - st.t0
            if dt < 0:  # the counter wrapped (or time went back: then dt is huge)
                dt += _PM1
                dt += 1
            if dt >= self._flush_ticks:
                self._emit(st)
                off = _HDR
                st.t0 = t
                st.e0 = self._epoch(t)
                dt = 0
        pack_into(st.fmt, st.buf, off, dt, data)
        off += st.size
        st.off = off
        if off >= st.end:
            self._emit(st)

    def _append_raw(self, t, can_id, data, flags, dlc, msg):
        st = self._raw
        if st is None:
            return
        if len(data) > st.payload:
            st.lost_buffer += 1  # a CAN FD payload and a classic raw bus stream
            return
        if dlc < 0:
            dlc = _LEN2DLC[len(data)]
        off = st.off
        if off == _HDR:
            st.t0 = t
            st.e0 = self._epoch(t)
            dt = 0
        else:
            dt = t - st.t0
            if dt < 0:
                dt += _PM1
                dt += 1
            if dt >= self._flush_ticks:
                self._emit(st)
                off = _HDR
                st.t0 = t
                st.e0 = self._epoch(t)
                dt = 0
        pack_into(st.fmt, st.buf, off, dt, can_id, flags, dlc, data)
        off += st.size
        st.off = off
        if off >= st.end:
            self._emit(st)
        if msg.plen < 0 and msg is not st and not flags & 6:
            # a data frame matching a stream that is not exact (PGN match, branch) or
            # mirror routing: its per-message stream gets the first payload_len data
            # bytes, zero-padded (docs/SPEC.md §13.4, §13.7); an exact stream's lossy
            # frames stay in the raw bus stream alone
            off = msg.off
            if off == _HDR:
                msg.t0 = t
                msg.e0 = self._epoch(t)
                dt = 0
            else:
                dt = t - msg.t0
                if dt < 0:
                    dt += _PM1
                    dt += 1
                if dt >= self._flush_ticks:
                    self._emit(msg)
                    off = _HDR
                    msg.t0 = t
                    msg.e0 = self._epoch(t)
                    dt = 0
            pack_into(msg.fmt, msg.buf, off, dt, data)
            off += msg.size
            msg.off = off
            if off >= msg.end:
                self._emit(msg)

    def lost(self, controller=0, buffer=0, stream=None):
        """Count CAN frames lost before the writer saw them: `controller` =
        FIFO overruns, `buffer` = the application's queue was full (G13).
        Counted on `stream`, default the raw bus stream."""
        st = stream or self._raw
        if st is not None:
            st.lost_controller += controller
            st.lost_buffer += buffer

    def _epoch(self, t):
        """Wraps of the ticks counter at reading t (t at most ~half a period old)."""
        last = self._last
        if ticks_diff(t, last) >= 0:
            if t < last:
                self._wraps += 1
            self._last = t
            return self._wraps
        if t > last:
            return self._wraps - 1
        return self._wraps

    def poll(self):
        """Call from the main loop: tracks the clock's wraps and seals frames
        older than flush_ms. Allocates nothing."""
        now = self._ticks()
        self._epoch(now)
        if ticks_diff(now, self._due) < 0:
            return
        self._due = ticks_add(now, self._scan)
        fl = self._flush_ticks
        for st in self._streams:
            if st.off != _HDR and ticks_diff(now, st.t0) >= fl:
                self._emit(st)

    def flush(self):
        """Seal every open DATA frame and hand everything to the medium now."""
        for st in self._streams:
            self._emit(st)
        self._sync_out()

    # ------------------------------------------------------------ frames
    def _emit(self, st):
        size = st.off - _HDR
        if not size:
            return
        n = size // st.size
        self._before_frame()
        b = st.buf
        t = st.t0
        e = st.e0
        codec = 0
        if st.codec:
            z = self._deflater
            assert z is not None
            m = z.compress(b, _HDR, _HDR + size, self._zbuf, self._zview, _HDR, size)
            if m > 0:
                b = self._zbuf
                codec = _CODEC_DEFLATE
                stored = m
        if not codec:
            stored = size
        if PERIOD_30:
            pack_into("<IBBHHHHHIIBBHII", b, 0, 28 + stored, _FT_DATA, 0, st.sid, t & 0xFFFF,
                      (t >> 16) | ((e & 3) << 14), (e >> 2) & 0xFFFF, (e >> 18) & 0xFFFF, n, 0, codec, 0, 0,
                      size, 0)
        else:
            pack_into("<IBBHqIIBBHQ", b, 0, 28 + stored, _FT_DATA, 0, st.sid, e * TICKS_PERIOD + t, n, 0,
                      codec, 0, 0, size)
        end = _HDR + stored
        cs = self._cs
        cs[0] = 0xFFFFFF
        cs[1] = 0xFF
        self._crc(b, 0, end, cs)
        _crc.store(cs, b, end)
        self._put(b, end + 4)
        st.off = _HDR
        st.frames += 1
        st.records += n
        if self._dur == DUR_FRAME:
            self._sync_out()

    def _before_frame(self):
        if self._seq < 0 or self._seg >= self._seg_max:
            self._rotate()
            return
        now = self._ticks()
        d = ticks_diff(now, self._age_t)
        if d > 0:
            self._age_t = now
            us = self._age_us + d
            while us >= 1000000:
                us -= 1000000
                self._age_s += 1
            self._age_us = us
            if self._age_s >= self._seg_s:
                self._rotate()

    def _rotate(self):
        if self._seq >= 0 and self._dur == DUR_SEGMENT:
            self._sync_out()
        self._seq += 1
        if self._seq == 0:
            self._start_hi = self._pos_hi
            self._start_lo = self._pos_lo
        self._seg = 0
        self._age_t = self._ticks()
        self._age_us = 0
        self._age_s = 0
        c = self._ctl
        seq = self._seq
        pack_into("<IBBH16sHHHHII", c, 0, 32, _FT_SYNC, 0, 0, SYNC_PATTERN, seq & 0xFFFF, (seq >> 16) & 0xFFFF,
                  (seq >> 32) & 0xFFFF, 0, 0, 0)
        self._ctl_emit(32)
        for st in self._streams:
            self._put_schema(st)
        for ch in self._meta:
            self._put(ch, len(ch))
        for st in self._streams:
            self._loss(st)

    def _put_schema(self, st):
        if st.src is None:
            for ch in st.chunks:
                self._put(ch, len(ch))
            return
        off, n, head, tail = st.src
        self._put(head, 8)  # the frame header; the payload comes from the config file
        sc = self._scratch
        f = self._cfg
        assert sc is not None and f is not None
        try:
            f.seek(off)
            while n > 0:
                k = n if n < len(sc) else len(sc)
                if MICROPYTHON:
                    got = f.readinto(sc, k)
                else:
                    got = f.readinto(memoryview(sc)[:k])
                if not got:
                    raise OSError(5)
                self._put(sc, got)
                n -= got
        except OSError:
            self.errors += 1
            while n > 0:  # keep the frame's length: the CRC will not match, a reader skips it
                k = n if n < len(sc) else len(sc)
                self._put(sc, k)
                n -= k
        self._put(tail, 4)  # the CRC, computed once at load

    def _ctl_emit(self, plen):
        c = self._ctl
        cs = self._cs
        cs[0] = 0xFFFFFF
        cs[1] = 0xFF
        self._crc(c, 0, 8 + plen, cs)
        _crc.store(cs, c, 8 + plen)
        self._put(c, 12 + plen)

    def _loss(self, st):
        """Stream META with the session's loss counters (G13); no allocation."""
        c = self._ctl
        p = 12
        pack_into("<I", c, p, len(_K_CTRL))
        c[p + 4:p + 4 + len(_K_CTRL)] = _K_CTRL
        p = _dec(c, p + 4 + len(_K_CTRL), st.lost_controller)
        pack_into("<I", c, p, len(_K_BUF))
        c[p + 4:p + 4 + len(_K_BUF)] = _K_BUF
        p = _dec(c, p + 4 + len(_K_BUF), st.lost_buffer)
        pack_into("<IBBHI", c, 0, p - 8, _FT_META, 0, st.sid, 2)
        self._ctl_emit(p - 8)

    def meta(self, pairs, stream=None):
        """A META frame of (key, value) pairs: file-scope, or stream-scope for
        `stream`. Allocates (formats text); not for the hot path."""
        if self._seq < 0:
            self._rotate()
        self._put_frame(_FT_META, stream.sid if stream else 0, meta_payload(pairs))

    def anchor(self, wall_ns, source="gps", uncertainty_ns=None, t=None):
        """Bind the clock to UTC (G7): `wall_ns` (int ns since 1970) was true at
        ticks `t` (default: now). Written after the records it dates."""
        t = self._ticks() if t is None else t
        axis_ns = (self._epoch(t) * TICKS_PERIOD + t) * 1000
        pairs = [("logb.anchor.axis_ns", axis_ns), ("logb.anchor.wall_ns", wall_ns), ("logb.anchor.source", source)]
        if uncertainty_ns is not None:
            pairs.append(("logb.anchor.uncertainty_ns", uncertainty_ns))
        self.meta(pairs)

    def attach(self, name, media_type, data):
        """An ATTACH frame (codec none): e.g. the DBC the config came from."""
        if self._seq < 0:
            self._rotate()
        head = _str(name) + _str(media_type) + bytes(4) + len(data).to_bytes(8, "little")
        self._put_frame(_FT_ATTACH, 0, head + bytes(data))

    def _put_frame(self, ftype, sid, payload):
        for ch in self._chunks(frame_bytes(ftype, sid, payload)):
            self._put(ch, len(ch))
        if self._dur == DUR_FRAME:
            self._sync_out()

    def close(self):
        """Seal every stream, write the loss counters and END, flush. An INDEX
        is never written: it would need RAM growing with the recording."""
        if self._closed:
            return
        for st in self._streams:
            self._emit(st)
        if self._seq < 0:
            self._rotate()
        else:
            for st in self._streams:
                self._loss(st)
        c = self._ctl
        lo = self._pos_lo - self._start_lo
        hi = self._pos_hi - self._start_hi
        if lo < 0:
            lo += 0x1000000
            hi -= 1
        pack_into("<IBBHIIHHHH", c, 0, 16, _FT_END, 0, 0, 0, 0, lo & 0xFFFF, (lo >> 16) | ((hi & 0xFF) << 8),
                  (hi >> 8) & 0xFFFF, (hi >> 24) & 0xFFFF)
        self._ctl_emit(16)
        self._sync_out()
        self._closed = True
        if self._cfg is not None:
            self._cfg.close()
            self._cfg = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ pages
    def _put(self, src, n):
        """Append src[0:n] (n <= page) to the page buffer; full pages go out."""
        fill = self._fill
        sizes = self._sizes
        k = 0
        while sizes[k] < n:
            k += 1
        # copies sizes[k] >= n bytes: the excess lands past fill and is overwritten later
        pack_into(self._fmts[k], self._out, fill, src)
        fill += n
        self._fill = fill
        self._seg += n
        lo = self._pos_lo + n
        if lo >= 0x1000000:
            self._pos_hi += lo >> 24
            lo &= 0xFFFFFF
        self._pos_lo = lo
        if fill >= self._page:
            self._spill()

    def _spill(self):
        page = self._page
        if self._done:
            self._write(self._out, self._done, page - self._done)
        else:
            try:
                self._sink.write(self._pmv)
            except OSError:
                self.errors += 1
        r = self._fill - page
        if r:
            k = 0
            while self._sizes[k] < r:
                k += 1
            pack_into(self._fmts[k], self._out, 0, self._tail)
        self._fill = r
        self._done = 0

    def _sync_out(self):
        """Hand the partial page to the sink and flush it (the durability point)."""
        f = self._fill
        if f > self._done:
            self._write(self._out, self._done, f - self._done)
            self._done = f
        if self._flush is not None:
            try:
                self._flush()
            except OSError:
                self.errors += 1

    def _write(self, buf, off, n):
        try:
            if self._w4:
                self._sink.write(buf, off, n)
            else:
                self._sink.write(memoryview(buf)[off:off + n])
        except OSError:
            self.errors += 1

    # ------------------------------------------------------------ introspection
    @property
    def streams(self):
        return self._streams

    @property
    def position(self):
        """Bytes handed to the page buffer so far (file offset of the next frame)."""
        return self._pos_hi * 0x1000000 + self._pos_lo

    def stats(self):
        return {"position": self.position, "segments": self._seq + 1, "errors": self.errors,
                "streams": [(st.name, st.records + st.n, st.frames, st.lost_controller, st.lost_buffer)
                            for st in self._streams]}
