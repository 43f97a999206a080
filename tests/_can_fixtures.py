"""The CAN bus that tests/test_can_decode.py and tests/test_decode_stream.py record and decode:
a DBC of three messages (big- and little-endian, signed, an extended id, multiplexed, value
names) and random frames of its ids and one id it lacks."""

import numpy as np

from logb.can import layout

_MESSAGES = """VERSION ""

NS_ :

BS_:

BU_: ECU

BO_ 256 Engine: 8 ECU
 SG_ Speed : 7|16@0+ (0.25,0) [0|16383.75] "rpm" ECU
 SG_ Temp : 16|8@1- (0.5,-40) [-104|23.5] "degC" ECU
 SG_ Gear : 24|4@1+ (1,0) [0|15] "" ECU

BO_ 2566844926 Body: 8 ECU
 SG_ Door : 0|1@1+ (1,0) [0|1] "" ECU
 SG_ Lamp : 15|12@0- (1,0) [0|0] "" ECU

BO_ 512 Muxed: 8 ECU
 SG_ Sel M : 0|8@1+ (1,0) [0|0] "" ECU
 SG_ A m1 : 8|16@1+ (0.1,0) [0|0] "V" ECU
 SG_ B m2 : 8|16@1- (1,0) [0|0] "A" ECU
"""
_VALUES = 'VAL_ 256 Gear 0 "P" 1 "R" 2 "N" 3 "D" ;\n'


def dbc(comments=""):
    """The DBC text, with `comments` (CM_ lines) between the messages and the value names."""
    return f"{_MESSAGES}\n{comments}{_VALUES}"


def random_frames(rng, n):
    """(ids, flags, data) of n frames drawn from rng: Muxed's selector 0-3 (1 and 2 defined),
    every 97th frame a remote one. The caller draws the times after these."""
    ids = rng.choice([0x100, 0x200, 0x300, 0x18FEF1FE | (1 << 31)], n).astype(np.uint32)
    data = rng.integers(0, 256, (n, 8), np.uint8)
    data[ids == 0x200, 0] = rng.integers(0, 4, int((ids == 0x200).sum()))
    flags = np.zeros(n, np.uint8)
    flags[::97] |= layout.FLAG_REMOTE
    return ids, flags, data
