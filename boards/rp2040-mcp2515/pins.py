# Raspberry Pi Pico (RP2040) + MCP2515 module (8 MHz or 16 MHz crystal: set OSC_HZ) + SD breakout.
DEVICE = "rp2040-logger"
BITRATE = 500000
OSC_HZ = 8000000
CAN_SPI, CAN_SCK, CAN_MOSI, CAN_MISO, CAN_CS, CAN_INT = 0, 18, 19, 16, 17, 20
SD_SPI, SD_SCK, SD_MOSI, SD_MISO, SD_CS = 1, 10, 11, 12, 13
LED = 25  # the Pico's own LED ("LED" on a Pico W)
BUTTON = 15  # to GND
