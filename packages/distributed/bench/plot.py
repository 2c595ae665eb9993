"""Plots `pnpm bench:coordinator -- --json FILE` output as a PNG (Debian's python3-matplotlib).

    python3 bench/plot.py coordinator.json ../../docs/coordinator-scaling.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as handle:
        result = json.load(handle)
    rows = result["rows"]
    modes = sorted({row["mode"] for row in rows}, key=[row["mode"] for row in rows].index)
    figure, (reports, rounds) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    for mode in modes:
        picked = sorted((row for row in rows if row["mode"] == mode), key=lambda row: row["ranks"])
        ranks = [row["ranks"] for row in picked]
        line = reports.plot(ranks, [row["medianReportUs"] for row in picked], marker="o", label=f"{mode} median")[0]
        reports.plot(
            ranks,
            [row["perReportUs"] for row in picked],
            marker="x",
            linestyle="--",
            color=line.get_color(),
            alpha=0.6,
            label=f"{mode} mean",
        )
        rounds.plot(ranks, [row["decisionMs"] for row in picked], marker="o", color=line.get_color(), label=f"{mode} decision")
        rounds.plot(
            ranks,
            [row["finishMs"] for row in picked],
            marker="s",
            linestyle="--",
            color=line.get_color(),
            alpha=0.6,
            label=f"{mode} finish",
        )
    reports.set(xscale="log", yscale="log", xlabel="ranks", ylabel="coordinator µs per rank report")
    reports.set_title("Cost per report (flat = no quadratic step)")
    rounds.axhline(1.0, color="grey", linewidth=1, linestyle=":")
    rounds.text(64, 1.08, "1 ms", color="grey")
    rounds.set(xscale="log", yscale="log", xlabel="ranks", ylabel="ms")
    rounds.set_title("Last report → round start (decision); round end → next window (finish)")
    for axis in (reports, rounds):
        axis.set_xticks([row["ranks"] for row in rows if row["mode"] == modes[0]])
        axis.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    machine = result.get("machine", {})
    figure.suptitle(
        f"SimulatedCluster, mixed speeds — {machine.get('cpus', '?')} cores (shared), Node {machine.get('node', '?')}",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(target)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py COORDINATOR_JSON OUTPUT_PNG")
    main(sys.argv[1], sys.argv[2])
