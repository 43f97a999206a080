# ESP32 DevKit + MCP2515 module (8 MHz or 16 MHz crystal: set OSC_HZ) + SD breakout.
DEVICE = "esp32-logger"
BITRATE = 500000
OSC_HZ = 8000000
CAN_SPI, CAN_SCK, CAN_MOSI, CAN_MISO, CAN_CS, CAN_INT = 2, 18, 23, 19, 5, 4  # VSPI
SD_SPI, SD_SCK, SD_MOSI, SD_MISO, SD_CS = 1, 14, 13, 12, 15  # HSPI
LED = 2
BUTTON = 0  # the BOOT button
