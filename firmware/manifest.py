# Freeze the Logb writer into a MicroPython firmware (bytecode in flash: no
# RAM for the code, no compile at boot). In a board's manifest:
#     include("/path/to/logb/firmware/manifest.py")
# crc_viper.py needs the native emitter (every ARM, Xtensa and RISC-V port
# has it); drop it from `files` for a port without one. The board loop and
# its CAN drivers (board, machine_can, mcp2515) are part of the package.
metadata(description="Logb v0.1 writer: append-only, crash-safe CAN and sensor logging", version="0.1.0")
package(
    "logb",
    files=(
        "__init__.py",
        "_const.py",
        "_port.py",
        "_wire.py",
        "board.py",
        "config.py",
        "crc.py",
        "crc_viper.py",
        "link.py",
        "machine_can.py",
        "mcp2515.py",
        "schema.py",
        "sinks.py",
        "writer.py",
    ),
    base_path=".",
    opt=3,
)
