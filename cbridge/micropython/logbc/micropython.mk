# MicroPython user C module `logbc` (make-based ports: unix, qemu, stm32, ...).
#   make USER_C_MODULES=/path/to/logb/cbridge/micropython   (the folder that holds this one)
LOGBC_MOD_DIR := $(USERMOD_DIR)

SRC_USERMOD_C += $(LOGBC_MOD_DIR)/modlogbc.c
# Not scanned for qstrs; kernels.c says why the kernels are not listed one by one.
SRC_USERMOD_LIB_C += $(LOGBC_MOD_DIR)/kernels.c

# logbc_glue.c (one up) and logb_cbridge.h (two up)
CFLAGS_USERMOD += -I$(LOGBC_MOD_DIR)/.. -I$(LOGBC_MOD_DIR)/../..
# 1 KiB instead of 8 KiB of CRC tables on small parts: uncomment.
# CFLAGS_USERMOD += -DLOGB_CRC32C_SLICES=1
