#!/usr/bin/env python3
"""Interleaved start-up runs of several commands: wall time and CPU time (user + system of the
child process, from getrusage), min / median / max per command, and the median of each command's
paired difference to the first one (same round). The order flips every round; two rounds warm up.

usage: scripts/startup-paired.py ROUNDS NAME=COMMAND NAME=COMMAND ...
The CPU time is what the agent adds that waiting for a core does not blur (docs/performance.md)."""
import resource
import shlex
import statistics
import subprocess
import sys
import time


def main():
    rounds = int(sys.argv[1])
    commands = [arg.split('=', 1) for arg in sys.argv[2:]]
    wall = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    load_before = open('/proc/loadavg').read().split()[:3]
    for i in range(-2, rounds):
        for name, command in (commands if i % 2 == 0 else list(reversed(commands))):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(shlex.split(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            end = time.perf_counter()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                sys.exit(f"{name} exited {done.returncode}: {command}")
            if i >= 0:
                wall[name].append((end - start) * 1000)
                cpu[name].append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    load_after = open('/proc/loadavg').read().split()[:3]
    first = commands[0][0]

    def spread(values):
        return f"{min(values):.0f} / {statistics.median(values):.0f} / {max(values):.0f}"

    def paired(values, name):
        if name == first:
            return ""
        return f"{statistics.median([a - b for a, b in zip(values[name], values[first])]):+.0f}"

    print(f"{rounds} rounds, load {' '.join(load_before)} before, {' '.join(load_after)} after")
    print("| run | wall ms, min / median / max | CPU ms, min / median / max | added wall, paired median | added CPU, paired median |")
    print("| --- | --- | --- | --- | --- |")
    for name, _ in commands:
        print(f"| {name} | {spread(wall[name])} | {spread(cpu[name])} | {paired(wall, name)} | {paired(cpu, name)} |")


if __name__ == '__main__':
    main()
