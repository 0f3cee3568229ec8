"""PNG plots of a benchmark JSON in Liger's format, as Liger's
benchmarks_visualizer draws them: a line per provider over the x values,
the 20th to 80th percentile as a band. One PNG per kernel and dtype, with
forward, backward and full speed and the full step's memory side by side
(the panels a benchmark measured).

    plot.py FILE.json OUTDIR
"""
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [("speed", "forward"), ("speed", "backward"), ("speed", "full"), ("memory", "full")]
COLORS = {"ubgen": "tab:blue", "torch": "tab:orange", "copy": "tab:gray", "torch-gemms": "tab:green"}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py FILE.json OUTDIR")
    with open(sys.argv[1]) as f:
        records = json.load(f)
    os.makedirs(sys.argv[2], exist_ok=True)
    groups = defaultdict(list)  # (kernel, dtype) -> records
    for r in records:
        if r["kernel_name"] == "python_overhead":
            continue
        dtype = json.loads(r["extra_benchmark_config_str"]).get("dtype", "")
        groups[(r["kernel_name"], dtype)].append(r)
    written = []
    for (kernel, dtype), recs in sorted(groups.items()):
        panels = [pm for pm in PANELS if any((r["metric_name"], r["kernel_operation_mode"]) == pm for r in recs)]
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), constrained_layout=True, squeeze=False)
        for ax, (metric, mode) in zip(axes[0], panels):
            for r in recs:
                if r["metric_name"] != metric or r["kernel_operation_mode"] != mode:
                    continue
                prov = r["kernel_provider"]
                xs = r["x_values"]
                ax.plot(xs, r["y_values_50"], marker="o", label=prov, color=COLORS.get(prov))
                ax.fill_between(xs, r["y_values_20"], r["y_values_80"], alpha=0.25, color=COLORS.get(prov))
                ax.set_xlabel(r["x_label"])
                ax.set_ylabel("%s (%s)" % ("time" if metric == "speed" else "peak extra memory", r["metric_unit"]))
            ax.set_title("memory of a full step" if metric == "memory" else mode, fontsize=10)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8, loc="best")
        fig.suptitle("%s, %s: ubgen.torch vs PyTorch eager" % (kernel, dtype), fontsize=11)
        path = os.path.join(sys.argv[2], "%s_%s.png" % (kernel, dtype))
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    for p in written:
        print(p)


if __name__ == "__main__":
    main()
