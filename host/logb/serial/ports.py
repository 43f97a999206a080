"""Finding the logger's serial port by USB VID/PID (pyserial's list_ports)."""

import os

from ..errors import LinkError
from .client import _serial

# (VID, PID or None for any, what): USB serial ports that MicroPython boards present.
MICROPYTHON = [
    (0x2E8A, 0x0005, "Raspberry Pi Pico / Pico W / Pico 2 (MicroPython)"),
    (0xF055, 0x9800, "pyboard (MicroPython, CDC + MSC)"),
    (0xF055, 0x9801, "pyboard (MicroPython, CDC + HID)"),
    (0xF055, 0x9802, "MicroPython board (TinyUSB CDC: SAMD, i.MX RT, nRF, Renesas, ...)"),
    (0xF055, None, "MicroPython board"),
    (0x303A, 0x1001, "ESP32-S3/C3/C6 USB Serial/JTAG"),
    (0x303A, 0x4001, "ESP32-S2/S3 native USB (MicroPython)"),
    (0x303A, None, "Espressif native USB"),
    (0x2341, None, "Arduino board (MicroPython builds exist)"),
    (0x16C0, 0x0483, "Teensy (MicroPython builds exist)"),
]
# USB-UART bridges on ESP32/ESP8266 boards: likely, but shared with everything else.
BRIDGES = [
    (0x10C4, 0xEA60, "Silicon Labs CP210x"),
    (0x1A86, 0x7523, "WCH CH340"),
    (0x1A86, 0x55D4, "WCH CH9102"),
    (0x0403, 0x6001, "FTDI FT232R"),
    (0x0403, 0x6015, "FTDI FT231X"),
]


def _match(port, table):
    for vid, pid, what in table:
        if port.vid == vid and (pid is None or port.pid == pid):
            return what
    return None


def candidates(ports=None):
    """[(device path, description, native)] of ports that look like a MicroPython board."""
    if ports is None:
        ports = _comports()
    out = []
    for p in ports:
        if p.vid is None:
            continue
        what = _match(p, MICROPYTHON)
        if what:
            out.append((p.device, f"{what} [{p.vid:04x}:{p.pid:04x}]", True))
            continue
        what = _match(p, BRIDGES)
        if what:
            out.append((p.device, f"{what} [{p.vid:04x}:{p.pid:04x}]", False))
    return out


def _comports():
    _serial()
    from serial.tools import list_ports

    return list_ports.comports()


def find_port(port=None, ports=None):
    """The port to use: --port, else $LOGB_PORT, else the one MicroPython
    board found by VID/PID (a native one before a USB-UART bridge)."""
    if port:
        return port
    if os.environ.get("LOGB_PORT"):
        return os.environ["LOGB_PORT"]
    if ports is None:
        ports = _comports()
    found = candidates(ports)
    native = [c for c in found if c[2]]
    pick = native or found
    if len(pick) == 1:
        return pick[0][0]
    if not pick:
        raise LinkError("no MicroPython board found by USB VID/PID; give --port (or set LOGB_PORT)")
    listing = "; ".join(f"{d} ({w})" for d, w, _n in pick)
    raise LinkError(f"several boards found: {listing}; choose one with --port")
