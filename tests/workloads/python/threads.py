# tests/workloads/python/threads.py SECONDS: four threads, each named (its comm) after the
# function it runs: two loop in Python (holding the GIL in turns), one sleeps, one hashes in
# C with the GIL released.
import ctypes
import hashlib
import sys
import threading
import time

libc = ctypes.CDLL(None)
END = time.monotonic() + float(sys.argv[1])


def named(name):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME


def spin_a():
    named("py-spin-a")
    t = 0
    while time.monotonic() < END:
        for i in range(10000):
            t += i


def spin_b():
    named("py-spin-b")
    t = 0
    while time.monotonic() < END:
        for i in range(10000):
            t ^= i


def sleeper():
    named("py-sleep")
    while time.monotonic() < END:
        time.sleep(0.01)


def hasher():
    named("py-hash")
    data = b"x" * (1 << 20)
    while time.monotonic() < END:
        hashlib.sha256(data).digest()


threads = [threading.Thread(target=f) for f in (spin_a, spin_b, sleeper, hasher)]
for t in threads:
    t.start()
print("ready", flush=True)
for t in threads:
    t.join()
