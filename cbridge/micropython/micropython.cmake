# CMake-based ports (esp32, rp2): make USER_C_MODULES=/path/to/logb/cbridge/micropython/micropython.cmake
include(${CMAKE_CURRENT_LIST_DIR}/logbc/micropython.cmake)
