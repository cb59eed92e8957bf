"""A tiny lab for the tests: two figures, or one way of going wrong, chosen by its argument.

labkit is not copied here: under the engine it is found through the kit folder the runner puts
on PYTHONPATH, which is what this lab proves.
"""

import sys
import time

from labkit import figure, note

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
print("tiny lab: waiting and sizing")
if mode == "fail":
    print("boom: the lab fell over", file=sys.stderr)
    sys.exit(3)
if mode == "sleep":
    time.sleep(30)
if mode == "orphan":  # leaves a child holding the output pipe open after the lab exits
    import subprocess

    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
if mode == "none":
    sys.exit(0)
if mode == "wrong_unit":
    figure("wait", 2.0, "MiB")
else:
    figure("wait", 1.5, "us")  # the spec asks for ns: the engine converts, 1.5 us = 1500 ns
if mode != "missing":
    figure("size", 4096, "B")  # the spec asks for KiB: 4096 B = 4 KiB
if mode == "unknown":
    figure("extra", 1, "x")
note("tiny lab: nothing measured, two fixed figures")
note("a note on\ntwo lines, \x1b[31min red\x1b[0m")  # kept as the terminal shows it, on one line
print("wait 1.5 us, size 4096 B")
