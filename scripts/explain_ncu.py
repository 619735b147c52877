#!/usr/bin/env python3
"""The table of docs/explain.md: tessel explain's predicted totals over the
grid beside Nsight Compute's counters, per built-in and access class.

    scripts/explain_ncu.py OUTDIR

reads OUTDIR/NAME.explain.json and OUTDIR/NAME.ncu.csv as
scripts/explain_ncu.sh writes them, and prints one Markdown row per
built-in and class with the two figures and their ratio."""
import csv
import json
import os
import sys

# (class, explain's total keys summed, ncu metrics summed)
CLASSES = [
    # Nsight Compute counts cp.async's global reads (LDGSTS) as global loads.
    ("global ld requests", ["global_ld_requests", "ldgsts_requests"],
     ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]),
    ("global ld sectors", ["global_ld_sectors", "ldgsts_sectors"],
     ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]),
    ("global st requests", ["global_st_requests"],
     ["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]),
    ("global st sectors", ["global_st_sectors"],
     ["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]),
    ("cp.async requests", ["ldgsts_requests"],
     ["smsp__inst_executed_op_ldgsts.sum"]),
    ("shared ld requests", ["shared_ld_requests"],
     ["smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_ldsm.sum"]),
    ("shared ld wavefronts", ["shared_ld_wavefronts"],
     ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"]),
    ("shared ld conflicts", ["shared_ld_conflicts"],
     ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"]),
    ("shared st requests", ["shared_st_requests"],
     ["smsp__inst_executed_op_shared_st.sum"]),
    ("shared st wavefronts", ["shared_st_wavefronts"],
     ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]),
    ("shared st conflicts", ["shared_st_conflicts"],
     ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]),
]


def explain_totals(path):
    with open(path) as f:
        record = json.load(f)
    totals = {}
    for k in record["kernels"]:
        for key, value in k["totals"].items():
            totals[key] = totals.get(key, 0) + value
    return totals


def ncu_totals(path):
    """Metric -> the sum over the kernels ncu profiled (tessel_* only)."""
    totals = {}
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        if not row.get("Kernel Name", "").startswith("tessel_"):
            continue
        value = row["Metric Value"].replace(",", "")
        try:
            totals[row["Metric Name"]] = (totals.get(row["Metric Name"], 0) +
                                          float(value))
        except ValueError:
            pass
    return totals


def main():
    out = sys.argv[1]
    names = sorted(n[:-len(".explain.json")] for n in os.listdir(out)
                   if n.endswith(".explain.json"))
    print("| schedule | class | explain | Nsight Compute | ratio |")
    print("|---|---|---:|---:|---:|")
    for name in names:
        ncu_path = os.path.join(out, name + ".ncu.csv")
        if not os.path.exists(ncu_path):
            continue
        ex = explain_totals(os.path.join(out, name + ".explain.json"))
        nc = ncu_totals(ncu_path)
        for label, keys, metrics in CLASSES:
            predicted = sum(ex.get(k, 0) for k in keys)
            present = [m for m in metrics if m in nc]
            counted = sum(nc[m] for m in present) if present else None
            if predicted == 0 and not counted:
                continue
            ratio = ("" if counted in (None, 0) else
                     "%.3f" % (predicted / counted))
            print("| %s | %s | %.0f | %s | %s |" % (
                name, label, predicted,
                "n/a" if counted is None else "%.0f" % counted, ratio))


if __name__ == "__main__":
    main()
