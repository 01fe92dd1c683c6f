# tests/workloads/python/offcpu.py SECONDS TRUTH_FILE: sleeps 3 ms in sleep_three and 1 ms in
# sleep_one, in turn, for SECONDS; TRUTH_FILE, mapped shared, holds the nanoseconds each spent
# off the CPU so far (its monotonic time less its thread CPU time), two 8-byte counts.
import mmap
import struct
import sys
import time


def sleep_three():
    time.sleep(0.003)


def sleep_one():
    time.sleep(0.001)


def measured(call):
    wall, cpu = time.monotonic_ns(), time.thread_time_ns()
    call()
    return max(0, (time.monotonic_ns() - wall) - (time.thread_time_ns() - cpu))


def main():
    seconds, truth = float(sys.argv[1]), sys.argv[2]
    with open(truth, "wb") as f:
        f.write(bytes(16))
    with open(truth, "r+b") as f:
        spent = mmap.mmap(f.fileno(), 16)
    three = one = 0
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        three += measured(sleep_three)
        one += measured(sleep_one)
        struct.pack_into("<QQ", spent, 0, three, one)


main()
