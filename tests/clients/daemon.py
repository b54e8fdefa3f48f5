"""A banditd for the client suites (tests/clients): started on a throwaway
database at a fixed loopback port (so a restart keeps the address a client
holds), stopped with SIGTERM and checked for a clean exit.

Env: BANDITD_BIN (default build/asan/banditd, as tests/support/harness.h).
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BANDITD_BIN", os.path.join(ROOT, "build", "asan", "banditd"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, *flags):
        self.dir = tempfile.mkdtemp(prefix="banditd-clients.")
        self.db = os.path.join(self.dir, "test.db")
        self.port = free_port()
        self.flags = list(flags)
        self.p = None
        self.log = open(os.path.join(self.dir, "stderr.log"), "a")

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def key(self, scope, *extra):
        """A new key (`banditd keys create`)."""
        out = subprocess.run([BIN, "keys", "create", "--db", self.db, "--scope", scope] + list(extra),
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def start(self):
        self.p = subprocess.Popen(
            [BIN, "--listen", "127.0.0.1:%d" % self.port, "--db", self.db, "--sync", "normal"]
            + self.flags, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError("banditd did not start: %r (see %s)" % (line, self.dir))
        return self

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(timeout=60)

    def stop(self):
        """SIGTERM; the exit status (0: a clean shutdown)."""
        self.p.terminate()
        rc = self.p.wait(timeout=60)
        self.p.stdout.close()
        return rc

    def cleanup(self):
        if self.p is not None and self.p.poll() is None:
            self.kill()
        self.log.close()
        if not os.environ.get("BANDITD_TEST_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def stderr(self):
        self.log.flush()
        with open(os.path.join(self.dir, "stderr.log")) as f:
            return f.read()
