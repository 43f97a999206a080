# MicroPython user C module `logbc` (CMake-based ports: esp32, rp2).
#   make USER_C_MODULES=/path/to/logb/cbridge/micropython/micropython.cmake   (which includes this file)
add_library(usermod_logbc INTERFACE)

# The same two sources as micropython.mk: the bindings and the kernels.
target_sources(usermod_logbc INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/modlogbc.c
    ${CMAKE_CURRENT_LIST_DIR}/kernels.c
)

# logbc_glue.c (one up) and logb_cbridge.h (two up)
target_include_directories(usermod_logbc INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/..
    ${CMAKE_CURRENT_LIST_DIR}/../..
)

# 1 KiB instead of 8 KiB of CRC tables on small parts: uncomment.
# target_compile_definitions(usermod_logbc INTERFACE LOGB_CRC32C_SLICES=1)

target_link_libraries(usermod INTERFACE usermod_logbc)
