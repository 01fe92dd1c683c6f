# tests/workloads/python/split.py SECONDS TRUTH_FILE: spends about 3:1 of its CPU in two
# pure-Python functions, the second also calling zlib.compress; TRUTH_FILE holds the split it
# measured itself so far (thread CPU seconds in each), rewritten in place after every round.
import sys
import time
import zlib

DATA = bytes(range(256)) * 64


def busy(n):
    t = 0
    for i in range(n):
        t += i * i
    return t


def compressing(n):
    t = 0
    for i in range(n):
        t += i
        if i % 400 == 0:
            zlib.compress(DATA, 6)
    return t


def main():
    seconds, truth = float(sys.argv[1]), sys.argv[2]
    spent, out = [0.0, 0.0], open(truth, "w", buffering=1)  # a line is written whole
    n_busy, n_compressing = 20000, 20000
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.thread_time()
        busy(n_busy)
        t1 = time.thread_time()
        compressing(n_compressing)
        t2 = time.thread_time()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        # Steer each call of busy towards three times one of compressing.
        if t1 > t0 and t2 > t1:
            n_busy = max(1000, min(2000000, int(n_busy * 3 * (t2 - t1) / (t1 - t0))))
        out.seek(0)
        out.write("%20.9f %20.9f\n" % (spent[0], spent[1]))


main()
