# The three CRC-32C forms of firmware/logb/crc.py on the unix port (run by
# tests/firmware/test_fw_unix.py): `micropython mp_crc.py BUFFERS.bin`.
# BUFFERS.bin: records of u32 length, u8 split count, that many u32 split
# points, the bytes. For each form ("pure", "viper", "c": crc.select()) and
# each buffer, the register is begun once and updated piece by piece between
# the split points (odd offsets and lengths), then stored. Prints one line
# "RESULT {form: {"backend": name, "is_logbc": bool, "crcs": [hex, ...]}}".
import json
import struct
import sys

from logb import crc

bufs = []
with open(sys.argv[1], "rb") as f:
    blob = f.read()
p = 0
while p < len(blob):
    n, k = struct.unpack_from("<IB", blob, p)
    p += 5
    cuts = struct.unpack_from("<%dI" % k, blob, p)
    p += 4 * k
    bufs.append((bytearray(blob[p:p + n]), cuts))
    p += n

res = {}
out = bytearray(4)
st = crc.state()
for form in ("pure", "viper", "c"):
    name = crc.select(form)
    crcs = []
    for buf, cuts in bufs:
        crc.begin(st)
        a = 0
        for b in cuts + (len(buf),):
            crc.update(buf, a, b, st)
            a = b
        crc.store(st, out, 0)
        crcs.append("%08x" % struct.unpack("<I", out)[0])
    is_logbc = False
    try:
        import logbc

        is_logbc = crc.update is logbc.crc32c_update
    except ImportError:
        pass
    res[form] = {"backend": name, "is_logbc": is_logbc, "crcs": crcs}
print("RESULT " + json.dumps(res))
