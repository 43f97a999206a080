# STM32 logger: machine.CAN (MicroPython 1.28), or pyb.CAN on a firmware without it, into SD files;
# parts only, the loop is logb.board.
import machine

import pins
from logb import board
from logb.machine_can import MachineCAN, PybCAN


class Profile:
    CONFIG = "/config.lbcf"
    DEVICE = "stm32-logger"
    WRITER = {"flush_ms": 1000}

    def can():
        if hasattr(machine, "CAN"):
            return [MachineCAN(machine.CAN, pins.CAN_BUS, pins.BITRATE)]
        import pyb  # before 1.28, and CAN FD on H7

        return [PybCAN(pyb.CAN, pins.CAN_BUS, pins.BITRATE)]

    def storage():
        return board.mount(machine.SDCard(), pins.SD_ROOT)

    def led():
        return machine.Pin(pins.LED, machine.Pin.OUT)

    def button():
        return machine.Pin(pins.BUTTON, machine.Pin.IN, machine.Pin.PULL_UP)


board.run(Profile)
