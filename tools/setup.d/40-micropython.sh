# for: test bench
# Real MicroPython (issue 15): the v1.28.0 unix port with the logbc C module (64- and 32-bit),
# mpy-cross, the logbc natmods (x64, armv6m, armv7emsp) and the qemu Cortex-M3
# image with logbc and the firmware frozen in, and the qemu-repl image (a RAM
# littlefs at /, no firmware frozen: what `logb flash` is tested against), built by tools/micropython_build.py
# from ../shared/micropython into ~/.cache/logb/micropython (outside the tree;
# about a minute the first time, then only what changed).
# Debian packages for the qemu port, installed when missing (as root, tried once
# per package set): newlib for arm-none-eabi-gcc, qemu-system-arm to run it, and
# gcc-12-multilib for the 32-bit unix port (a board's int and object sizes; not
# gcc-multilib, which conflicts with the aarch64 cross compiler of 20-cbridge.sh).
# A build that fails is reported here and again by every test that needs it.
_logb_micropython() {
  local pkgs=()
  command -v arm-none-eabi-gcc >/dev/null 2>&1 || pkgs+=(gcc-arm-none-eabi binutils-arm-none-eabi)
  [ -e /usr/lib/arm-none-eabi/newlib ] || [ -e /usr/lib/arm-none-eabi/lib/libc.a ] || pkgs+=(libnewlib-arm-none-eabi)
  command -v qemu-system-arm >/dev/null 2>&1 || pkgs+=(qemu-system-arm)
  echo 'int main(void){return 0;}' | gcc -m32 -x c -o /dev/null - >/dev/null 2>&1 || pkgs+=(gcc-12-multilib)
  if [ "${#pkgs[@]}" -gt 0 ]; then
    local stamp="${VENV:-.venv}/.logb-mp-apt-tried-$(echo "${pkgs[*]}" | cksum | cut -d' ' -f1)"
    if [ ! -e "$stamp" ]; then
      touch "$stamp" 2>/dev/null || true
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${pkgs[*]} for the MicroPython qemu port ..." >&2
        local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}")
        "${apt[@]}" >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 || true; "${apt[@]}" >/dev/null 2>&1; } \
          || echo "note: could not install ${pkgs[*]}" >&2
      else
        echo "note: ${pkgs[*]} not installed (needs root and apt-get)" >&2
      fi
    fi
  fi
  { "$PY" tools/micropython_build.py >&2 && "$PY" tools/micropython_build.py qemu-repl >&2; } || echo "note: MicroPython builds incomplete (see above); the tests that need them fail" >&2
  return 0
}
_logb_micropython || true
unset -f _logb_micropython
