import json, sys
def walk(d, path=""):
    if isinstance(d, dict):
        for k, v in d.items():
            p = path + "." + k
            if k in ("cycle_median_ms",) or (path.endswith(("class_alone_ms", "class_cost_ms")) and k == "attention"):
                print(p, v)
            walk(v, p)
    elif isinstance(d, list):
        for i, v in enumerate(d):
            walk(v, path + "[%d]" % i)
walk(json.load(open(sys.argv[1])))
