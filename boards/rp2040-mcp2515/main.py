# MCP2515 logger: CAN over SPI into SD files; the parts are logb.board.mcp2515_sd, from pins.py.
import machine
import sdcard  # micropython-lib (mip install sdcard)

import pins
from logb import board

board.run(board.mcp2515_sd(pins, machine, sdcard))
