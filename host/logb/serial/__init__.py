"""The host side of the Logb serial link (docs/LINK.md): `logb pull` and
`logb tail` talk to firmware/logb/link.py on the logger over pyserial.

protocol: the wire format; client: one link session (connect, requests,
reconnect); pull: verified, resumable copies; live: decoding frames as they
arrive (tail); ports: finding the board by USB VID/PID.
"""
