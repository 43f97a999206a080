# MCP2515 logger: CAN over SPI into SD files; parts only, the loop is logb.board.
from machine import SPI, Pin

import pins
from logb import board
from logb.mcp2515 import MCP2515


class Profile:
    CONFIG = "/config.lbcf"
    DEVICE = pins.DEVICE
    WRITER = {"flush_ms": 1000}

    def can():
        spi = SPI(pins.CAN_SPI, baudrate=10_000_000, sck=Pin(pins.CAN_SCK), mosi=Pin(pins.CAN_MOSI),
                  miso=Pin(pins.CAN_MISO))
        return [MCP2515(spi, Pin(pins.CAN_CS, Pin.OUT, value=1), Pin(pins.CAN_INT, Pin.IN, Pin.PULL_UP),
                        bitrate=pins.BITRATE, osc_hz=pins.OSC_HZ)]

    def storage():
        import sdcard  # micropython-lib (mip install sdcard)

        spi = SPI(pins.SD_SPI, baudrate=1_000_000, sck=Pin(pins.SD_SCK), mosi=Pin(pins.SD_MOSI),
                  miso=Pin(pins.SD_MISO))
        return board.mount(sdcard.SDCard(spi, Pin(pins.SD_CS, Pin.OUT, value=1)), "/sd")

    def led():
        return Pin(pins.LED, Pin.OUT)

    def button():
        return Pin(pins.BUTTON, Pin.IN, Pin.PULL_UP)


board.run(Profile)
