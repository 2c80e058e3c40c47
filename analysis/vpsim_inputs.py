"""Readers for vpsim's output files, with the checks that turn a bad file into one clear message.

Every plot and the report read their numbers through these functions, so a malformed input stops the
run here (InputError naming the file and the key) instead of surfacing as a matplotlib traceback or,
worse, as a plausible-looking wrong picture.

Formats (their producers are the reference):
  vpsim.results/1        `vpsim model --format json`, `vpsim run --out`, `vpsim import-trace --breakdown`
                         (sim/results/results_json.c; sim/report/report_run.c adds measured / environment /
                         model_comparison / command_line, sim/import/import_report.c the import block)
  sweep CSV              `vpsim sweep --out` (sim/sweep/sweep_run.c): varied keys, then the results columns
  vpsim.bench_allreduce/1  `vpsim bench-allreduce --format json` (sim/exec/exec_bench_json.c)
  vpsim.plan/1           `vpsim plan --format json` (sim/plan/plan_json.c, README "Plan JSON")
  vpsim.heldout/1        `bench/heldout.py FOLDER SYSTEM --json OUT`: model against replay per op class and
                         cycle on held-out scenarios

The three vpsim records are also checked against the JSON Schema vpsim emits for them (docs/schemas/,
`vpsim schema RECORD`: made from the table that writes and reads each one, so every key, type, range and
required key is the C reader's), after the checks below that name the usual mistakes in plainer words.
That needs python3-jsonschema (`make deps` installs it); without it the checks below are all there is.
"""

import csv
import json
import math
import os

RESULTS_SCHEMA = "vpsim.results/1"
BENCH_SCHEMA = "vpsim.bench_allreduce/1"
PLAN_SCHEMA = "vpsim.plan/1"
HELDOUT_SCHEMA = "vpsim.heldout/1"

# Keys every available backend row carries (sim/results/results_json.c row_fields); all in ms except as named.
RESULT_NUMBERS = (
    "allreduce_us", "verify_ms", "verify_gemm_ms", "verify_attention_ms", "verify_comm_ms",
    "verify_other_ms", "draft_ms", "host_ms", "cycle_ms", "tokens_per_cycle", "tok_per_s",
)
# The CSV columns of report_results_csv_header, in order; the sweep's varied keys come before them.
CSV_COLUMNS = (
    "backend", "available", "reason", "allreduce_us", "allreduce_method", "verify_ms", "verify_comm_ms",
    "verify_gemm_ms", "verify_attention_ms", "verify_other_ms", "draft_ms", "draft_extend_ms", "host_ms",
    "cycle_ms", "tokens_per_cycle", "tok_per_s",
)
CSV_TEXT = ("backend", "available", "reason", "allreduce_method")
# Columns newer vpsim writes after tok_per_s (older sweeps end at tok_per_s; both are read). Numbers may
# be empty (nospec_tok_per_s when no baseline was modelled) and then read as None.
# The memory columns came last: mem_gib and mem_capacity_gib (per rank, GiB) and fits (true/false) are
# read on every row, available or not, since a point that does not fit is unavailable for that reason
# and its figures say by how much; older files without them still read (fits then absent).
CSV_ADDED = ("tpot_ms", "accepted_per_cycle", "engine_vllm", "engine_sglang", "nospec_tok_per_s", "warnings",
             "mem_gib", "mem_capacity_gib", "fits")
CSV_ADDED_BEFORE_MEMORY = CSV_ADDED[:6]
CSV_ADDED_TEXT = ("engine_vllm", "engine_sglang", "warnings")
CSV_ADDED_ALWAYS = ("mem_gib", "mem_capacity_gib")


class InputError(Exception):
    """A file that cannot be used, with the path and what is wrong (the message users see)."""

    def __init__(self, path, msg):
        super().__init__(f"{path}: {msg}")
        self.path = path


def is_number(v):
    # bool is an int in Python; a JSON true where a duration belongs is a broken file, not 1 ms.
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _need(path, obj, key, where, kind=None):
    """obj[key], checked to exist (and to be a number / str / list / dict / bool when kind says so)."""
    if not isinstance(obj, dict):
        raise InputError(path, f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise InputError(path, f"{where}: missing key '{key}'")
    v = obj[key]
    checks = {
        "number": (is_number, "a finite number"),
        "str": (lambda x: isinstance(x, str), "a string"),
        "list": (lambda x: isinstance(x, list), "a list"),
        "dict": (lambda x: isinstance(x, dict), "an object"),
        "bool": (lambda x: isinstance(x, bool), "true or false"),
        "int": (lambda x: isinstance(x, int) and not isinstance(x, bool), "an integer"),
    }
    if kind:
        ok, what = checks[kind]
        if not ok(v):
            raise InputError(path, f"{where}: '{key}' must be {what}, got {json.dumps(v)[:60]}")
    return v


def read_text(path):
    if not os.path.exists(path):
        raise InputError(path, "no such file")
    if os.path.isdir(path):
        raise InputError(path, "is a directory, expected a file")
    with open(path, "rb") as f:
        data = f.read()
    if not data.strip():
        raise InputError(path, "empty file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start}); is this a vpsim output file?") from None


def load_json(path):
    text = read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    if not isinstance(doc, dict):
        raise InputError(path, f"expected a JSON object at the top, got {type(doc).__name__}")
    return doc


def _check_schema(path, doc, want):
    got = doc.get("schema")
    if got != want:
        raise InputError(path, f"schema is {json.dumps(got)}, expected \"{want}\"")


# ---------------------------------------------------------------- the emitted JSON Schemas

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "schemas")
SCHEMA_FILES = {"vpsim.results/1": "results.schema.json", "vpsim.bench_allreduce/1": "bench.schema.json",
                "vpsim.plan/1": "plan.schema.json"}
_validators = {}


def _where(parts):
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "top level"


def check_record(path, doc, tag):
    """`doc` against docs/schemas/ for its tag (the record's whole description, as vpsim's reader has it)."""
    try:
        import jsonschema
    except ImportError:  # the field checks of each loader still ran
        return doc
    v = _validators.get(tag)
    if v is None:
        name = os.path.join(SCHEMA_DIR, SCHEMA_FILES[tag])
        if not os.path.exists(name):  # analysis/ away from its checkout: the field checks still ran
            return doc
        with open(name, encoding="utf-8") as f:
            v = _validators[tag] = jsonschema.Draft202012Validator(json.load(f))
    err = jsonschema.exceptions.best_match(v.iter_errors(doc))
    if err is not None:
        # A `false` schema: a key only records of another mode (or op kind) carry.
        what = "no record of this kind carries it" if err.schema is False else err.message[:300]
        raise InputError(path, f"{_where(err.absolute_path)}: {what} "
                               f"(docs/schemas/{SCHEMA_FILES[tag]}, the {tag} record vpsim reads)")
    return doc


# ---------------------------------------------------------------- vpsim.results/1

def check_results(path, doc):
    """Validate a results document in place and return it."""
    _check_schema(path, doc, RESULTS_SCHEMA)
    for key, kind in (("mode", "str"), ("scenario", "str"), ("tp", "int"), ("batch", "int"),
                      ("context", "int"), ("backends", "list")):
        _need(path, doc, key, "top level", kind)
    if doc["mode"] not in ("model", "run", "import-trace"):
        raise InputError(path, "top level: 'mode' must be \"model\", \"run\" or \"import-trace\", got "
                               f"{json.dumps(doc['mode'])}")
    if not doc["backends"]:
        raise InputError(path, "top level: 'backends' is empty")
    for i, b in enumerate(doc["backends"]):
        where = f"backends[{i}]"
        name = _need(path, b, "backend", where, "str")
        where = f"backends[{i}] ({name})"
        if not _need(path, b, "available", where, "bool"):
            continue
        for key in RESULT_NUMBERS:
            _need(path, b, key, where, "number")
        for j, ph in enumerate(_need(path, b, "phases", where, "list")):
            pw = f"{where}.phases[{j}]"
            _need(path, ph, "name", pw, "str")
            _need(path, ph, "kind", pw, "str")
            for key in ("ms", "gemm_ms", "attention_ms", "comm_ms", "other_ms"):
                _need(path, ph, key, pw, "number")
        for j, op in enumerate(b.get("ops") or []):
            ow = f"{where}.ops[{j}]"
            for key, kind in (("phase", "str"), ("index", "int"), ("name", "str"), ("kind", "str"),
                              ("us", "number")):
                _need(path, op, key, ow, kind)
    if doc["mode"] == "import-trace":  # `vpsim import-trace --breakdown`: a server's profile, read back
        imp = _need(path, doc, "import", "top level (an import)", "dict")
        for key in ("cycle_ms", "named_fraction"):
            _need(path, imp, key, "import", "number")
        for key, kind in (("source", "str"), ("files", "list"), ("cycles", "int"), ("ranks", "int")):
            _need(path, imp, key, "import", kind)
    if doc["mode"] == "run":
        m = _need(path, doc, "measured", "top level (a run)", "dict")
        for key in ("cycle_median_ms", "cycle_p10_ms", "cycle_p90_ms"):
            _need(path, m, key, "measured", "number")
        for key in ("ranks", "iters"):
            _need(path, m, key, "measured", "int")
        _need(path, m, "graph", "measured", "bool")
        env = doc.get("environment", {})
        if not isinstance(env, dict):
            raise InputError(path, "top level: 'environment' must be an object")
        cmp = doc.get("model_comparison")
        if cmp is not None:
            _need(path, cmp, "system", "model_comparison", "str")
            for scope in ("verify", "cycle"):
                sc = _need(path, cmp, scope, "model_comparison", "dict")
                for cls, row in sc.items():
                    for key in ("measured_ms", "modelled_ms", "error_pct"):
                        _need(path, row, key, f"model_comparison.{scope}.{cls}", "number")
    return check_record(path, doc, RESULTS_SCHEMA)


def load_results(path):
    return check_results(path, load_json(path))


# ---------------------------------------------------------------- vpsim.compare/1

COMPARE_SCHEMA = "vpsim.compare/1"


def load_ranking(path):
    """A `vpsim compare --format json` document: rows best first, each with variant, backend, available,
    tok_per_s (null when not available), gain_pct, fits (null when unknown) and baseline."""
    doc = load_json(path)
    _check_schema(path, doc, COMPARE_SCHEMA)
    _need(path, doc, "rows", "top level", "list")
    if not doc["rows"]:
        raise InputError(path, "rows: empty list")
    for i, row in enumerate(doc["rows"]):
        where = f"rows[{i}]"
        if not isinstance(row, dict):
            raise InputError(path, f"{where}: expected an object")
        for key, kind in (("variant", "str"), ("backend", "str"), ("available", "bool"), ("baseline", "bool")):
            _need(path, row, key, where, kind)
        tok = row.get("tok_per_s")
        if row["available"] and (not isinstance(tok, (int, float)) or isinstance(tok, bool) or not math.isfinite(tok)):
            raise InputError(path, f"{where}: available but 'tok_per_s' is not a number: {json.dumps(tok)}")
        if row.get("fits") not in (True, False, None):
            raise InputError(path, f"{where}: 'fits' must be true, false or null")
    return doc


# ---------------------------------------------------------------- sweep CSV

def _parse_float(path, line, col, text):
    try:
        v = float(text)
    except ValueError:
        raise InputError(path, f"line {line}: column '{col}' is not a number: {text!r}") from None
    if not math.isfinite(v):
        raise InputError(path, f"line {line}: column '{col}' is not finite: {text!r}")
    return v


def load_sweep(path):
    """A `vpsim sweep` CSV -> {"path", "varied": [keys], "rows": [dict]}.

    Numbers of available rows become floats; rows with available=false keep only their reason (the
    sweep writes them for combinations that are invalid together, e.g. steps 3 with 3 draft tokens)."""
    text = read_text(path)
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(path, "empty file") from None
    if "backend" not in header:
        raise InputError(path, "line 1: no 'backend' column; expected the header of `vpsim sweep --out FILE.csv`")
    start = header.index("backend")
    added = tuple(header[start + len(CSV_COLUMNS):])
    if tuple(header[start:start + len(CSV_COLUMNS)]) != CSV_COLUMNS or added not in ((), CSV_ADDED_BEFORE_MEMORY, CSV_ADDED):
        missing = [c for c in CSV_COLUMNS if c not in header[start:]]
        what = f"missing {', '.join(missing)}" if missing else "columns in another order or extra columns"
        raise InputError(path, f"line 1: not the vpsim results CSV header ({what})")
    varied = header[:start]
    rows = []
    for line_no, rec in enumerate(reader, start=2):
        if not rec:
            continue
        if len(rec) != len(header):
            raise InputError(path, f"line {line_no}: {len(rec)} fields, the header has {len(header)}")
        raw = dict(zip(header, rec))
        if raw["available"] not in ("true", "false"):
            raise InputError(path, f"line {line_no}: column 'available' must be true or false, got {raw['available']!r}")
        row = {"available": raw["available"] == "true", "backend": raw["backend"], "reason": raw["reason"],
               "allreduce_method": raw["allreduce_method"], "line": line_no}
        row["params"] = {k: raw[k] for k in varied}
        if row["available"]:
            for col in CSV_COLUMNS:
                if col not in CSV_TEXT:
                    row[col] = _parse_float(path, line_no, col, raw[col])
        for col in added:
            if col in CSV_ADDED_TEXT:
                row[col] = raw[col]
            elif col == "fits":
                if raw[col] not in ("true", "false", ""):
                    raise InputError(path, f"line {line_no}: column 'fits' must be true, false or empty, got {raw[col]!r}")
                row[col] = None if raw[col] == "" else raw[col] == "true"
            elif col in CSV_ADDED_ALWAYS or row["available"]:
                row[col] = _parse_float(path, line_no, col, raw[col]) if raw[col] != "" else None
        rows.append(row)
    if not rows:
        raise InputError(path, "no data rows after the header")
    return {"path": path, "varied": varied, "rows": rows}


# ---------------------------------------------------------------- vpsim.bench_allreduce/1

# Alternative spellings accepted for a bench row: the nccl-tests column names the issue lists (size,
# time, algbw, busbw, #wrong), so a table converted by hand or an older writer still reads.
ROW_ALIASES = {
    "bytes": ("bytes", "size"),
    "count": ("count",),
    "time_us": ("time_us", "time"),
    "algbw_gbps": ("algbw_gbps", "algbw"),
    "busbw_gbps": ("busbw_gbps", "busbw"),
    "wrong": ("wrong", "#wrong"),
}


def _alias(row, key):
    for k in ROW_ALIASES[key]:
        if k in row:
            return k
    return None


def check_bench(path, doc):
    """Validate a bench-allreduce document; returns a normalised copy with canonical row keys."""
    _check_schema(path, doc, BENCH_SCHEMA)
    ranks = _need(path, doc, "ranks", "top level", "int")
    out = {"path": path, "ranks": ranks, "device": str(doc.get("device", "?")), "type": str(doc.get("type", "?")),
           "iters": doc.get("iters"), "graph": bool(doc.get("graph_requested", False)),
           "virtual_ranks": bool(doc.get("virtual_ranks", False)), "note": doc.get("note"),
           "environment": doc.get("environment") if isinstance(doc.get("environment"), dict) else {},
           "command": doc.get("command"), "backends": []}
    model = doc.get("model")
    if model is not None and not (isinstance(model, dict) and isinstance(model.get("system"), str)):
        raise InputError(path, "top level: 'model' must be null or an object with a 'system' string")
    out["model"] = model
    backends = _need(path, doc, "backends", "top level", "list")
    aliased = False  # a table converted by hand (nccl-tests' names) is read, but is not vpsim's record
    if not backends:
        raise InputError(path, "top level: 'backends' is empty")
    for i, b in enumerate(backends):
        where = f"backends[{i}]"
        if not isinstance(b, dict):
            raise InputError(path, f"{where}: expected an object")
        aliased = aliased or "name" not in b
        name = b.get("name", b.get("backend"))
        if not isinstance(name, str):
            raise InputError(path, f"{where}: missing key 'name' (the backend)")
        where = f"backends[{i}] ({name})"
        supported = b.get("supported", True)
        if not isinstance(supported, bool):
            raise InputError(path, f"{where}: 'supported' must be true or false")
        nb = {"name": name, "supported": supported, "reason": b.get("reason"), "graph": bool(b.get("graph")),
              "model_method": b.get("model_method"), "rows": []}
        for j, r in enumerate(_need(path, b, "rows", where, "list") if supported else b.get("rows", [])):
            rw = f"{where}.rows[{j}]"
            if not isinstance(r, dict):
                raise InputError(path, f"{rw}: expected an object")
            nr = {}
            for key in ("bytes", "time_us", "algbw_gbps", "busbw_gbps"):
                k = _alias(r, key)
                if k is None:
                    raise InputError(path, f"{rw}: missing key '{key}'")
                aliased = aliased or k != key
                nr[key] = _need(path, r, k, rw, "number")
            if nr["bytes"] <= 0 or nr["time_us"] <= 0:
                raise InputError(path, f"{rw}: bytes and time_us must be positive")
            k = _alias(r, "count")
            nr["count"] = _need(path, r, k, rw, "number") if k else None
            k = _alias(r, "wrong")
            wrong = r.get(k) if k else None
            if wrong is not None and not is_number(wrong):
                raise InputError(path, f"{rw}: 'wrong' must be a number or null")
            nr["wrong"] = wrong
            vp = r.get("verify_pass", False)
            if not isinstance(vp, bool):
                raise InputError(path, f"{rw}: 'verify_pass' must be true or false")
            nr["verify_pass"] = vp
            mu = r.get("model_us")  # bench-allreduce --model / --from: the model's per-call time
            if mu is not None and (not is_number(mu) or mu <= 0):
                raise InputError(path, f"{rw}: 'model_us' must be a positive number or null")
            nr["model_us"] = mu
            nb["rows"].append(nr)
        if supported and not nb["rows"]:
            raise InputError(path, f"{where}: supported but has no rows")
        out["backends"].append(nb)
    if not aliased:
        check_record(path, doc, BENCH_SCHEMA)
    return out


def load_bench(path):
    return check_bench(path, load_json(path))


# ---------------------------------------------------------------- vpsim.plan/1

def check_plan(path, doc):
    _check_schema(path, doc, PLAN_SCHEMA)
    _need(path, doc, "ranks", "top level", "int")
    phases = _need(path, doc, "phases", "top level", "list")
    if not phases:
        raise InputError(path, "top level: 'phases' is empty")
    for i, ph in enumerate(phases):
        where = f"phases[{i}]"
        _need(path, ph, "name", where, "str")
        _need(path, ph, "kind", where, "str")
        summ = _need(path, ph, "summary", where, "dict")
        for j, v in enumerate(_need(path, summ, "allreduce_bytes", f"{where}.summary", "list")):
            if not is_number(v):
                raise InputError(path, f"{where}.summary.allreduce_bytes[{j}] is not a number")
        for j, op in enumerate(ph.get("ops", [])):
            _need(path, op, "kind", f"{where}.ops[{j}]", "str")
            _need(path, op, "stream", f"{where}.ops[{j}]", "str")
    return check_record(path, doc, PLAN_SCHEMA)


def load_plan(path):
    return check_plan(path, load_json(path))


# ---------------------------------------------------------------- vpsim.heldout/1

# The rows of each held-out case, in the order bench/heldout.py writes them: three op classes summed
# over the cycle's phases, then the cycle; the first three are held to bounds.class_pct, the cycle to
# bounds.cycle_pct.
HELDOUT_CLASSES = ("gemm", "attention", "other")
HELDOUT_ROWS = HELDOUT_CLASSES + ("cycle",)
# error_pct is written with full precision; more than this apart from (modelled - measured) / measured
# means the columns were edited or come from different runs.
HELDOUT_ERROR_TOLERANCE_PCT = 0.01


def check_heldout(path, doc):
    """Validate a held-out document in place and return it: every case carries the four rows with
    measured_ms > 0, an error_pct that agrees with its two times, and a within_bounds that agrees with
    the bounds (the report prints it, so a verdict the numbers do not support is refused)."""
    _check_schema(path, doc, HELDOUT_SCHEMA)
    for key in ("system", "scenario"):
        _need(path, doc, key, "top level", "str")
    bounds = _need(path, doc, "bounds", "top level", "dict")
    for key in ("class_pct", "cycle_pct"):
        if _need(path, bounds, key, "bounds", "number") <= 0:
            raise InputError(path, f"bounds: '{key}' must be positive, got {bounds[key]}")
    cases = _need(path, doc, "cases", "top level", "list")
    if not cases:
        raise InputError(path, "top level: 'cases' is empty")
    for i, case in enumerate(cases):
        where = f"cases[{i}]"
        name = _need(path, case, "case", where, "str")
        where = f"cases[{i}] ({name})"
        _need(path, case, "sets", where, "str")
        for key in ("run", "gpu"):
            if key in case and not isinstance(case[key], str):
                raise InputError(path, f"{where}: '{key}' must be a string, got {json.dumps(case[key])[:60]}")
        within = _need(path, case, "within_bounds", where, "bool")
        inside = True
        for cls in HELDOUT_ROWS:
            row = _need(path, case, cls, where, "dict")
            rw = f"{where}.{cls}"
            meas, mod, err = (_need(path, row, k, rw, "number") for k in ("measured_ms", "modelled_ms", "error_pct"))
            if meas <= 0 or mod < 0:
                raise InputError(path, f"{rw}: measured_ms must be positive and modelled_ms not negative")
            want = 100.0 * (mod - meas) / meas
            if abs(err - want) > HELDOUT_ERROR_TOLERANCE_PCT:
                raise InputError(path, f"{rw}: error_pct {err:.3f} does not match (modelled - measured) / "
                                       f"measured = {want:.3f}")
            inside = inside and abs(err) <= bounds["cycle_pct" if cls == "cycle" else "class_pct"]
        if within != inside:
            raise InputError(path, f"{where}: within_bounds is {json.dumps(within)} but the errors are "
                                   f"{'inside' if inside else 'outside'} ±{bounds['class_pct']:g}% per class / "
                                   f"±{bounds['cycle_pct']:g}% cycle")
    return doc


def load_heldout(path):
    return check_heldout(path, load_json(path))


# ---------------------------------------------------------------- folders

def classify(path):
    """'results' | 'bench' | 'plan' | 'heldout' | 'sweep' | None (not a vpsim output; skipped by the report)."""
    if path.endswith(".csv"):
        return "sweep"
    if not path.endswith(".json"):
        return None
    schema = load_json(path).get("schema")
    return {RESULTS_SCHEMA: "results", BENCH_SCHEMA: "bench", PLAN_SCHEMA: "plan",
            HELDOUT_SCHEMA: "heldout"}.get(schema)


def load_any(path):
    kind = classify(path)
    loader = {"results": load_results, "bench": load_bench, "plan": load_plan, "heldout": load_heldout,
              "sweep": load_sweep}.get(kind)
    if loader is None:
        raise InputError(path, "not a vpsim output (expected a .csv sweep or JSON with schema "
                               f"{RESULTS_SCHEMA}, {BENCH_SCHEMA}, {PLAN_SCHEMA} or {HELDOUT_SCHEMA})")
    return kind, loader(path)
