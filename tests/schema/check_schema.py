#!/usr/bin/env python3
"""schema/scenario.schema.json (JSON Schema draft 2020-12) against the scenario format:
  valid      the schema is a valid draft 2020-12 schema; every bundled scenario (scenarios/ and
             examples/, files with "turns"), every file of tests/schema/valid/ (which lint accepts
             too) and a counterexample freshly written by `hiccup explore` validate
  invalid    every file of tests/schema/invalid/ is rejected by the schema AND by `hiccup lint`
             (exit 3): lint and the schema agree on them
  defects    the schema's defect enum is exactly `hiccup defects`
Uses Debian's python3-jsonschema (scripts/setup.sh installs it). Exit 0 pass, 1 failure.
Usage: check_schema.py --hiccup BIN --source DIR --work DIR {valid,invalid,defects}"""
import argparse, glob, json, os, shutil, subprocess, sys

import jsonschema


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def validator(source):
    schema = load(os.path.join(source, "schema", "scenario.schema.json"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema, jsonschema.Draft202012Validator(schema)


def first_error(v, doc):
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    return "/" + "/".join(str(p) for p in e.absolute_path) + ": " + e.message[:200]


def check_valid(args, v):
    failures = []
    candidates = sorted(glob.glob(os.path.join(args.source, "scenarios", "**", "*.json"), recursive=True))
    candidates += sorted(f for f in glob.glob(os.path.join(args.source, "examples", "**", "*.json"), recursive=True)
                         if "node_modules" not in f and not f.endswith("package-lock.json") and not f.endswith("package.json"))
    files = [f for f in candidates if isinstance(load(f), dict) and "turns" in load(f)]
    # Fields no bundled scenario uses yet (tests/schema/valid/: `tools`), each file also loading in lint.
    extra = sorted(glob.glob(os.path.join(args.source, "tests", "schema", "valid", "*.json")))
    for f in extra:
        r = subprocess.run([args.hiccup, "lint", f], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{f}: hiccup lint exit {r.returncode}: {(r.stdout + r.stderr).strip()[:300]}")
    files += extra
    # A counterexample as explore writes it.
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    rc = subprocess.run([args.hiccup, "explore", "--cases", "200", "--seed", "1", "--defect", "keep-calls-on-retry",
                         "--report-dir", args.work], capture_output=True, text=True).returncode
    written = sorted(glob.glob(os.path.join(args.work, "counterexamples", "*.json")))
    if rc != 1 or not written:
        failures.append(f"explore wrote no counterexample (exit {rc})")
    for f in files + written:
        err = first_error(v, load(f))
        if err:
            failures.append(f"{f}: {err}")
    print(f"{len(files)} bundled scenarios, {len(written)} counterexample(s) checked against the schema")
    return failures


def check_invalid(args, v):
    failures = []
    files = sorted(glob.glob(os.path.join(args.source, "tests", "schema", "invalid", "*.json")))
    if len(files) < 10:
        failures.append(f"expected at least 10 invalid files, found {len(files)}")
    for f in files:
        err = first_error(v, load(f))
        lint = subprocess.run([args.hiccup, "lint", f], capture_output=True, text=True)
        name = os.path.basename(f)
        if err is None:
            failures.append(f"{name}: the schema accepts it, lint says: {lint.stderr.strip() or lint.stdout.strip()}")
        if lint.returncode != 3:
            failures.append(f"{name}: lint exit {lint.returncode} (expected 3), the schema says: {err}")
        else:
            print(f"{name}: both reject (schema {err}; lint {(lint.stderr or lint.stdout).strip().splitlines()[0]})")
    return failures


def check_defects(args, schema):
    out = subprocess.run([args.hiccup, "defects"], capture_output=True, text=True, check=True).stdout
    catalogue = [line.split()[0] for line in out.splitlines() if line.strip()]
    enum = schema["$defs"]["defect"]["enum"]
    return [] if enum == catalogue else [f"schema defect enum {enum} differs from `hiccup defects` {catalogue}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hiccup", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("check", choices=["valid", "invalid", "defects"])
    args = ap.parse_args()
    schema, v = validator(args.source)
    failures = {"valid": lambda: check_valid(args, v), "invalid": lambda: check_invalid(args, v),
                "defects": lambda: check_defects(args, schema)}[args.check]()
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
