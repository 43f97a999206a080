// The cbridge kernels as a MicroPython dynamic native module: `logbc.mpy`,
// copied to the board's filesystem and imported like any module.
#include "py/dynruntime.h"

#include "logbc_glue.c"

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY

    mp_store_global(MP_QSTR_crc32c, MP_OBJ_FROM_PTR(&logbc_crc32c_obj));
    mp_store_global(MP_QSTR_crc32c_update, MP_OBJ_FROM_PTR(&logbc_crc32c_update_obj));
    mp_store_global(MP_QSTR_extract, MP_OBJ_FROM_PTR(&logbc_extract_obj));
    mp_store_global(MP_QSTR_pack, MP_OBJ_FROM_PTR(&logbc_pack_obj));
    mp_store_global(MP_QSTR_transpose, MP_OBJ_FROM_PTR(&logbc_transpose_obj));
    mp_store_global(MP_QSTR_untranspose, MP_OBJ_FROM_PTR(&logbc_untranspose_obj));
    mp_store_global(MP_QSTR_SIGNED, MP_OBJ_NEW_SMALL_INT(LOGB_KIND_SIGNED));
    mp_store_global(MP_QSTR_BOOL, MP_OBJ_NEW_SMALL_INT(LOGB_KIND_BOOL));

    MP_DYNRUNTIME_INIT_EXIT
}
