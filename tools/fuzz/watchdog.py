"""The watchdog: the target runs in a child process under resource limits,
so an input that allocates gigabytes or never ends becomes a finding and the
caller (a test run, a campaign) goes on.

The child (`python -m tools.fuzz worker`) sets RLIMIT_AS to its start-up
size plus AS_HEADROOM_MB (an allocation beyond fails with MemoryError inside
the step that made it) and, before each step, RLIMIT_CPU to what it has used
plus STEP_CPU_S (a step that spins is killed by SIGXCPU). Protocol: the
parent writes each input as a 4-byte little-endian length and the bytes; the
child answers with JSON lines, {"step": name} as each step starts and then
{"ok": true} or {"finding": {...}}. A child that dies is a finding in the
step it last announced; the next input gets a new child.
"""

import json
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile

from .target import Finding, check, shape

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AS_HEADROOM_MB = 768  # far above the 256 MB RSS limit: the RSS check fires first, this stops bombs
WALL_TIMEOUT_S = 120  # no news from the child for this long: it is stuck (not spinning: RLIMIT_CPU kills that)
_LEN = struct.Struct("<I")


class Watchdog:
    """A worker child, restarted after it dies. `run(data)` returns None or a Finding."""

    def __init__(self, env=None):
        self.env = env
        self.proc = None
        self.last_shape = None  # what the last clean input made the reader do (target.shape)
        self.shapes = set()  # for the caller: the shapes it has kept an input for

    def _start(self):
        self.stderr = tempfile.TemporaryFile()  # what a dying child last said
        self._pending = b""
        self.proc = subprocess.Popen([sys.executable, "-m", "tools.fuzz", "worker"], cwd=ROOT, env=self.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)

    def run(self, data):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        step = "start"
        try:
            self.proc.stdin.write(_LEN.pack(len(data)) + data)
            self.proc.stdin.flush()
            while True:
                line = self._line()
                if line is None:
                    return self._died(step)
                msg = json.loads(line)
                if "step" in msg:
                    step = msg["step"]
                elif "finding" in msg:
                    return Finding.from_json(msg["finding"])
                else:
                    self.last_shape = msg["shape"]
                    return None
        except BrokenPipeError:
            return self._died(step)

    def _line(self):
        """The child's next line, or None when it died or went silent. Read
        from the pipe itself: select() cannot see lines a buffered reader holds."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], WALL_TIMEOUT_S)
            if not ready:
                self.proc.kill()
                self.proc.wait()
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _died(self, step):
        code = self.proc.wait()
        self.proc = None
        if code == -signal.SIGXCPU:
            return Finding("cpu", step, "killed by RLIMIT_CPU (SIGXCPU)")
        if code == -signal.SIGKILL:
            return Finding("hang", step, f"no progress for {WALL_TIMEOUT_S} s")
        name = signal.Signals(-code).name if code < 0 else f"exit status {code}"
        self.stderr.seek(0)
        said = self.stderr.read().decode(errors="replace").strip().splitlines()
        return Finding("crash", step, f"the process died: {name}", said[-1][:300] if said else "")

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def serve():
    """The child's loop (see the module docstring)."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # whatever the read path prints must not reach the protocol
        os.dup2(devnull, fd)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    limit = _vm_size() + (AS_HEADROOM_MB << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def send(obj):
        proto_out.write(json.dumps(obj).encode() + b"\n")
        proto_out.flush()

    with tempfile.TemporaryDirectory(prefix="logb-fuzz-") as tmp:
        path = os.path.join(tmp, "input.logb")
        while True:
            head = proto_in.read(_LEN.size)
            if len(head) < _LEN.size:
                return
            (n,) = _LEN.unpack(head)
            data = proto_in.read(n)
            with open(path, "wb") as f:
                f.write(data)
            try:
                outcomes = check(data, path, enforce=True, progress=lambda step: send({"step": step}))
            except Finding as finding:
                send({"finding": finding.as_json()})
            else:
                send({"ok": True, "shape": shape(outcomes)})
