# for: test bench
# cbridge (issue 3): cross compilers from Debian, installed only when missing,
# as root with apt-get, tried once per .venv and package set; where that is not
# possible the tests and benchmark sections that need them skip and say why.
#   test   gcc-arm-none-eabi (the kernels' firmware builds), gcc-aarch64-linux-gnu
#          and qemu-user (the aarch64 self-test, tests/test_cbridge.py)
#   bench  gcc-arm-none-eabi only (the kernels' code size, tools/bench_cbridge.py)
# (The host build of the kernels needs only the C compiler pip already used.)
_logb_cbridge_tools() {
  local pkgs=()
  command -v arm-none-eabi-gcc >/dev/null 2>&1 || pkgs+=(gcc-arm-none-eabi binutils-arm-none-eabi)
  if [ "$SETUP_FOR" = test ]; then
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
    command -v qemu-aarch64 >/dev/null 2>&1 || pkgs+=(qemu-user)
  fi
  [ "${#pkgs[@]}" -eq 0 ] && return 0
  local stamp="${VENV:-.venv}/.logb-cbridge-apt-tried-$(echo "${pkgs[*]}" | cksum | cut -d' ' -f1)"
  [ -e "$stamp" ] && return 0
  touch "$stamp" 2>/dev/null || true
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: ${pkgs[*]} not installed (needs root and apt-get); what needs them will skip" >&2
    return 0
  fi
  echo "installing ${pkgs[*]} for the cbridge cross builds ..." >&2
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}")
  if ! "${apt[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    "${apt[@]}" >/dev/null 2>&1 || echo "note: could not install ${pkgs[*]}; what needs them will skip" >&2
  fi
  return 0
}
_logb_cbridge_tools || true
unset -f _logb_cbridge_tools
