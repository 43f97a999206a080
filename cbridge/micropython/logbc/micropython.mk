# MicroPython user C module `logbc` (make-based ports: stm32, rp2 via make, unix, ...).
#   make USER_C_MODULES=/path/to/logb/cbridge/micropython   (the folder that holds this one)
LOGBC_MOD_DIR := $(USERMOD_DIR)
LOGBC_GLUE := $(LOGBC_MOD_DIR)/..
LOGBC_CBRIDGE := $(LOGBC_MOD_DIR)/../..

SRC_USERMOD_C += $(LOGBC_MOD_DIR)/modlogbc.c
# The portable kernels only (crc32c_hw.c is for hosts with a CRC instruction).
SRC_USERMOD_LIB_C += $(LOGBC_CBRIDGE)/crc32c.c $(LOGBC_CBRIDGE)/bits.c \
                     $(LOGBC_CBRIDGE)/transpose.c $(LOGBC_CBRIDGE)/tails.c

CFLAGS_USERMOD += -I$(LOGBC_GLUE) -I$(LOGBC_CBRIDGE)
# 1 KiB instead of 8 KiB of CRC tables on small parts: uncomment.
# CFLAGS_USERMOD += -DLOGB_CRC32C_SLICES=1
