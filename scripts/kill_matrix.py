#!/usr/bin/env python3
"""The exploration kill matrix: `hiccup explore --defect D --cases 200 --seed S` for every defect
and seeds 1-10 (memory transport). Prints a Markdown table: per defect, how many seeds caught it,
the median case index of the first failure, and the shrunk counterexample's size (turns/attempts).
With --provider NAME every case is played in that wire format (default: drawn per case).
With --defect D (repeatable) only those rows are run. With --recovery DESIGN every case plays that
recovery design (hold or continue; default: drawn per case, or the defect's own design).
Usage: scripts/kill_matrix.py [--seeds N] [--provider NAME] [--recovery DESIGN] [--defect D]... [--hiccup build/hiccup]"""
import argparse, json, os, statistics, subprocess, sys, tempfile

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--hiccup", default="build/hiccup")
    ap.add_argument("--provider", default="")
    ap.add_argument("--recovery", default="", choices=["", "hold", "continue"])
    ap.add_argument("--defect", action="append", default=[], help="only this defect's row (repeatable)")
    args = ap.parse_args()
    defects = [line.split()[0] for line in subprocess.run([args.hiccup, "defects"], capture_output=True,
                                                          text=True, check=True).stdout.splitlines()]
    # no-pairing-guard is an equivalent mutant alone: run with keep-calls-on-retry, and alone to
    # show it. double-result-after-cancel also without the guard, where the provider sees the
    # duplicate (alone it shows in the final history when the cancel ends the session).
    rows = [[d] for d in defects if d != "no-pairing-guard"] + [["keep-calls-on-retry", "no-pairing-guard"],
                                                                ["double-result-after-cancel", "no-pairing-guard"],
                                                                ["no-pairing-guard"]]
    if args.defect:
        rows = [[d] for d in args.defect]
    print("| defect(s) | caught (seeds) | median first failing case | shrunk size, turns/attempts (max) |")
    print("|---|---|---|---|")
    for combo in rows:
        firsts, sizes = [], []
        for seed in range(1, args.seeds + 1):
            with tempfile.TemporaryDirectory() as out:
                cmd = [args.hiccup, "explore", "--cases", str(args.cases), "--seed", str(seed), "--report-dir", out]
                for d in combo:
                    cmd += ["--defect", d]
                if args.provider:
                    cmd += ["--provider", args.provider]
                if args.recovery:
                    cmd += ["--recovery", args.recovery]
                rc = subprocess.run(cmd, capture_output=True, text=True).returncode
                if rc != 1:
                    continue
                summary = json.load(open(os.path.join(out, "summary.json")))
                failed = [c for c in summary["cases"] if not c["passed"] and "counterexample" in c]
                if not failed:
                    continue
                firsts.append(failed[0]["failing_case"])
                shrunk = json.load(open(failed[0]["counterexample"]))
                turns = len(shrunk["turns"])
                attempts = sum(len(t["attempts"]) for t in shrunk["turns"])
                sizes.append((turns, attempts))
        median = statistics.median(firsts) if firsts else "-"
        size = f"{max(s[0] for s in sizes)}/{max(s[1] for s in sizes)}" if sizes else "-"
        print(f"| {' + '.join(combo)} | {len(firsts)}/{args.seeds} | {median} | {size} |")
        sys.stdout.flush()

if __name__ == "__main__":
    main()
