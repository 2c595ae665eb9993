"""Plots `pnpm bench:coordinator -- --json FILE` output as a PNG (Debian's python3-matplotlib).

    /usr/bin/python3 bench/plot.py COORDINATOR_JSON OUTPUT_PNG [BEFORE_JSON]

BEFORE_JSON: an earlier run (another version of the code) drawn grey for comparison.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source: str, target: str, before: str | None) -> None:
    with open(source, encoding="utf-8") as handle:
        result = json.load(handle)
    rows = result["rows"]
    modes = sorted({row["mode"] for row in rows}, key=[row["mode"] for row in rows].index)
    figure, (reports, rounds) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    for mode in modes:
        picked = sorted((row for row in rows if row["mode"] == mode), key=lambda row: row["ranks"])
        ranks = [row["ranks"] for row in picked]
        line = reports.plot(ranks, [row["medianReportUs"] for row in picked], marker="o", label=f"{mode} median")[0]
        dashed = {"linestyle": "--", "color": line.get_color(), "alpha": 0.6}
        reports.plot(ranks, [row["perReportUs"] for row in picked], marker="x", label=f"{mode} mean", **dashed)
        rounds.plot(ranks, [row["decisionMs"] for row in picked], marker="o", color=line.get_color(), label=f"{mode} decision")
        rounds.plot(ranks, [row["finishMs"] for row in picked], marker="s", label=f"{mode} finish", **dashed)
    if before:
        with open(before, encoding="utf-8") as handle:
            earlier = json.load(handle)["rows"]
        for mode in sorted({row["mode"] for row in earlier}):
            picked = sorted((row for row in earlier if row["mode"] == mode), key=lambda row: row["ranks"])
            reports.plot(
                [row["ranks"] for row in picked],
                [row["medianReportUs"] for row in picked],
                marker="^",
                color="grey",
                alpha=0.7,
                label=f"{mode} median, before",
            )
    reports.set(xscale="log", yscale="log", xlabel="ranks", ylabel="coordinator µs per rank report")
    reports.set_title("Cost per report (flat = no quadratic step)")
    rounds.axhline(1.0, color="grey", linewidth=1, linestyle=":")
    rounds.text(64, 1.08, "1 ms", color="grey")
    rounds.set(xscale="log", yscale="log", xlabel="ranks", ylabel="ms")
    rounds.set_title("Decision (last report → round start) and finish")
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
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: plot.py COORDINATOR_JSON OUTPUT_PNG [BEFORE_JSON]")
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
