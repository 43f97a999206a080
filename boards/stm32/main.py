# STM32 logger: machine.CAN (MicroPython 1.28) into SD files; parts only, the loop is logb.board.
import machine

import pins
from logb import board
from logb.machine_can import MachineCAN


class Profile:
    CONFIG = "/config.lbcf"
    DEVICE = "stm32-logger"
    WRITER = {"flush_ms": 1000}

    def can():
        return [MachineCAN(machine.CAN, pins.CAN_BUS, pins.BITRATE)]

    def storage():
        return board.mount(machine.SDCard(), pins.SD_ROOT)

    def led():
        return machine.Pin(pins.LED, machine.Pin.OUT)

    def button():
        return machine.Pin(pins.BUTTON, machine.Pin.IN, machine.Pin.PULL_UP)


board.run(Profile)
