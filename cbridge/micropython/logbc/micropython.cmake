# MicroPython user C module `logbc` (CMake-based ports: esp32, rp2).
#   make USER_C_MODULES=/path/to/logb/cbridge/micropython/micropython.cmake   (which includes this file)
add_library(usermod_logbc INTERFACE)

set(LOGBC_GLUE ${CMAKE_CURRENT_LIST_DIR}/..)
set(LOGBC_CBRIDGE ${CMAKE_CURRENT_LIST_DIR}/../..)

target_sources(usermod_logbc INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/modlogbc.c
    ${LOGBC_CBRIDGE}/crc32c.c
    ${LOGBC_CBRIDGE}/bits.c
    ${LOGBC_CBRIDGE}/transpose.c
    ${LOGBC_CBRIDGE}/tails.c
)

target_include_directories(usermod_logbc INTERFACE
    ${LOGBC_GLUE}
    ${LOGBC_CBRIDGE}
)

# 1 KiB instead of 8 KiB of CRC tables on small parts: uncomment.
# target_compile_definitions(usermod_logbc INTERFACE LOGB_CRC32C_SLICES=1)

target_link_libraries(usermod INTERFACE usermod_logbc)
