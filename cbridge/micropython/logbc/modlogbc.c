// The cbridge kernels as a MicroPython user C module named `logbc`, compiled
// into a firmware image (see README.md: USER_C_MODULES=.../cbridge/micropython).
#include "py/runtime.h"

#include "logbc_glue.c"

static const mp_rom_map_elem_t logbc_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_logbc) },
    { MP_ROM_QSTR(MP_QSTR_crc32c), MP_ROM_PTR(&logbc_crc32c_obj) },
    { MP_ROM_QSTR(MP_QSTR_crc32c_update), MP_ROM_PTR(&logbc_crc32c_update_obj) },
    { MP_ROM_QSTR(MP_QSTR_extract), MP_ROM_PTR(&logbc_extract_obj) },
    { MP_ROM_QSTR(MP_QSTR_pack), MP_ROM_PTR(&logbc_pack_obj) },
    { MP_ROM_QSTR(MP_QSTR_transpose), MP_ROM_PTR(&logbc_transpose_obj) },
    { MP_ROM_QSTR(MP_QSTR_untranspose), MP_ROM_PTR(&logbc_untranspose_obj) },
    { MP_ROM_QSTR(MP_QSTR_SIGNED), MP_ROM_INT(LOGB_KIND_SIGNED) },
    { MP_ROM_QSTR(MP_QSTR_BOOL), MP_ROM_INT(LOGB_KIND_BOOL) },
};
static MP_DEFINE_CONST_DICT(logbc_module_globals, logbc_module_globals_table);

const mp_obj_module_t logbc_user_cmodule = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&logbc_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_logbc, logbc_user_cmodule);
