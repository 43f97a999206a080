# STM32F4 (pyboard v1.1 / PYBD layout): CAN1 on PB8 (RX) / PB9 (TX) to a 3.3 V transceiver
# (SN65HVD230), SD card on the built-in SDIO slot, LED and USR button of the board.
CAN_BUS = 1
BITRATE = 500000
LED = "LED_BLUE"
BUTTON = "SW"
SD_ROOT = "/sd"
