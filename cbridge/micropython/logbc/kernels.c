// The portable cbridge kernels as one source inside the user module's folder,
// for make ports: py.mk maps a source's path under USER_C_MODULES into the
// build folder, so ../../crc32c.c listed directly would put its object at
// ports/<port>/crc32c.o, shared (and stale) across every board and variant.
// (crc32c_hw.c is left out: it is for hosts with a CRC instruction.)
#include "../../crc32c.c"
#include "../../bits.c"
#include "../../transpose.c"
#include "../../tails.c"
