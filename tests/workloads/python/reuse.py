# tests/workloads/python/reuse.py SECONDS REPORT_FILE: compiles, runs and frees functions in
# a loop, so that code objects are freed and their addresses taken by new ones. Function
# rec_D_N calls itself to a depth of D, then loops: a sample in its loop holds exactly D
# frames of that one name, so a name left over from the code object that had the address
# before (of another D) shows. D is 3 or 7 at random: an address is taken again a fixed
# number of rounds later, which, in turn, would give it the same D every time. At the end
# REPORT_FILE gets the first line past the recursion, how many functions ran, and how many
# of them took the address of one of the other depth.
import collections
import random
import sys
import time

SOURCE = """
def {name}(n):
    if n < {depth}:
        return {name}(n + 1)
    t = 0
    for k in range(200000):
        t += k
    return t
"""
LOOP_LINE = 5  # the first line past the recursion in SOURCE, as compiled


def main():
    seconds, report = float(sys.argv[1]), sys.argv[2]
    # Each function is kept for a few rounds after it ran: long enough for the profiler to
    # read its name, short enough for its address to be taken again soon.
    kept = collections.deque()
    depth_at = {}
    ran = reused = 0
    pick = random.Random(19)
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        depth = pick.choice((3, 7))
        name = "rec_%d_%06d" % (depth, ran)
        ns = {}
        exec(compile(SOURCE.format(name=name, depth=depth), "reuse_gen.py", "exec"), ns)
        code = ns[name].__code__
        if depth_at.get(id(code), depth) != depth:
            reused += 1
        depth_at[id(code)] = depth
        ns[name](1)
        kept.append(ns)
        if len(kept) > 8:
            kept.popleft().clear()  # the function and its globals: a cycle, broken here
        del code
        ran += 1
    with open(report, "w") as out:
        out.write("%d %d %d\n" % (LOOP_LINE, ran, reused))


main()
