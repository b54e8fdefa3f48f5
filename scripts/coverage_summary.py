#!/usr/bin/env python3
"""coverage_summary.py SUMMARY.json DIR... — line and branch coverage per
directory from gcovr's --json-summary (make coverage): a Markdown table, one
row per directory and a total over them, on standard output."""
import json
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: coverage_summary.py SUMMARY.json DIR...")
    with open(sys.argv[1], encoding="utf-8") as f:
        files = json.load(f)["files"]
    dirs = sys.argv[2:]
    sums = {d: [0, 0, 0, 0, 0] for d in dirs}  # files, lines hit, lines, branches hit, branches
    for entry in files:
        top = entry["filename"].split("/", 1)[0]
        if top not in sums:
            continue
        s = sums[top]
        s[0] += 1
        s[1] += entry["line_covered"]
        s[2] += entry["line_total"]
        s[3] += entry["branch_covered"]
        s[4] += entry["branch_total"]

    def pct(a, b):
        return "%.1f%%" % (100.0 * a / b) if b else "–"

    print("| directory | files | lines | line coverage | branches | branch coverage |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    total = [0, 0, 0, 0, 0]
    for d in dirs:
        s = sums[d]
        total = [t + v for t, v in zip(total, s)]
        print("| %s/ | %d | %d/%d | %s | %d/%d | %s |"
              % (d, s[0], s[1], s[2], pct(s[1], s[2]), s[3], s[4], pct(s[3], s[4])))
    print("| total | %d | %d/%d | %s | %d/%d | %s |"
          % (total[0], total[1], total[2], pct(total[1], total[2]), total[3], total[4],
             pct(total[3], total[4])))


if __name__ == "__main__":
    main()
