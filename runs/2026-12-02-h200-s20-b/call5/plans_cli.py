"""The command line that bench/neighbour_plans.py and bench/class_plans.py share: `make PLAN_JSON OUTDIR`
writes a folder of plans from a scenario's plan, `read OUTDIR` prints what their replays measured."""
import sys


def run(make, read, doc):
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "read":
        read(sys.argv[2])
    else:
        sys.exit(doc[doc.index("usage:"):])
