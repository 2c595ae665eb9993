// The report of `pnpm bench:train`: markdown tables ready for docs/benchmarks.md and the setup
// line; with the single and foreach Adam modes in one run, their ratios side by side.

/** A markdown table of `rows` (the first row is the header), numbers right-aligned. */
function markdownTable(rows, rightAligned) {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const format = (row) =>
    `| ${row.map((cell, column) => (rightAligned[column] ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (rightAligned[column] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  return [format(rows[0]), rule, ...rows.slice(1).map(format)].join('\n');
}

/** Samples/s as a table shows them: whole numbers, three digits below 100. */
export function formatRate(samplesPerSecond) {
  return samplesPerSecond >= 100 ? String(Math.round(samplesPerSecond)) : samplesPerSecond.toPrecision(3);
}

/**
 * The ratio of each round (flodl / PyTorch, the two sides run back to back), as `median (min-max)`:
 * steadier than the ratio of the bests where the machine's speed drifts between rounds.
 */
export function roundRatios(flodlRounds, pytorchRounds) {
  const ratios = flodlRounds
    .map((ours, round) => ours.samplesPerSecond / pytorchRounds[round].samplesPerSecond)
    .sort((a, b) => a - b);
  const middle = Math.floor(ratios.length / 2);
  const median = ratios.length % 2 === 1 ? ratios[middle] : (ratios[middle - 1] + ratios[middle]) / 2;
  if (ratios.length === 1) return median.toFixed(2);
  return `${median.toFixed(2)} (${ratios[0].toFixed(2)}-${ratios[ratios.length - 1].toFixed(2)})`;
}

/** One row per model and mode: both sides' samples/s, their ratio and last losses. */
function resultsTable(summary, withMode) {
  const rows = [
    [
      'model',
      ...(withMode ? ['adam'] : []),
      'batch',
      'steps',
      'flodl samples/s',
      'PyTorch samples/s',
      'flodl / PyTorch',
      'by round: median (range)',
      'last loss flodl / PyTorch',
    ],
  ];
  for (const row of summary) {
    rows.push([
      row.name,
      ...(withMode ? [row.adam] : []),
      String(row.batch),
      String(row.steps),
      formatRate(row.flodl.samplesPerSecond),
      formatRate(row.pytorch.samplesPerSecond),
      row.ratio.toFixed(2),
      roundRatios(row.flodl.rounds, row.pytorch.rounds),
      `${row.flodl.finalLoss.toPrecision(4)} / ${row.pytorch.finalLoss.toPrecision(4)}`,
    ]);
  }
  const rightAligned = rows[0].map((_, column) => column >= (withMode ? 2 : 1));
  return markdownTable(rows, rightAligned);
}

/**
 * Per model, with both the single and the foreach mode measured: what foreach gains on each
 * side (in samples/s, and in the time of the optimizer's step alone: single / foreach, so
 * higher is better there too), and flodl's foreach step against PyTorch's single-tensor (its
 * CPU default) and foreach ones. Null when the run lacks one of the two modes.
 */
function foreachTable(summary) {
  const rows = [
    [
      'model',
      'flodl foreach / single',
      'PyTorch foreach / single',
      'flodl update single / foreach',
      'PyTorch update single / foreach',
      'flodl foreach / PyTorch single',
      'flodl foreach / PyTorch foreach',
    ],
  ];
  for (const name of new Set(summary.map((row) => row.name))) {
    const single = summary.find((row) => row.name === name && row.adam === 'single');
    const foreach = summary.find((row) => row.name === name && row.adam === 'foreach');
    if (single === undefined || foreach === undefined) continue;
    const ratio = (a, b) => (a.samplesPerSecond / b.samplesPerSecond).toFixed(2);
    const update = (a, b) => (a.updateSeconds / b.updateSeconds).toFixed(2);
    rows.push([
      name,
      ratio(foreach.flodl, single.flodl),
      ratio(foreach.pytorch, single.pytorch),
      update(single.flodl, foreach.flodl),
      update(single.pytorch, foreach.pytorch),
      ratio(foreach.flodl, single.pytorch),
      ratio(foreach.flodl, foreach.pytorch),
    ]);
  }
  return rows.length === 1 ? null : markdownTable(rows, [false, true, true, true, true, true, true]);
}

/** Prints the results as markdown tables (ready for docs/benchmarks.md) and the setup line. */
export function printReport(summary, setup) {
  console.log('');
  console.log(resultsTable(summary, setup.adams.length > 1));
  const foreach = foreachTable(summary);
  if (foreach !== null) {
    console.log('');
    console.log(foreach);
  }
  const { torch } = setup;
  const cudaPart =
    setup.device === 'cuda'
      ? `; ${setup.deviceName}, cuDNN ${torch.cudnn}, cudnn.benchmark off, TF32 matmul ` +
        `${torch.tf32.matmul ? 'on' : 'off'} and cuDNN ${torch.tf32.cudnn ? 'on' : 'off'} (libtorch's defaults, both sides)`
      : `; CPU linear maps and matrix products: flodl ${setup.linearBy}, PyTorch libtorch's BLAS (${torch.blas?.join(', ') ?? 'unknown'})`;
  console.log(
    `\nflodl: Node ${setup.node}, libtorch ${setup.libtorch}; PyTorch ${torch.torch} (${torch.python}, ` +
      `Python ${torch.pythonVersion}); ${setup.device}, ${setup.threads} threads${cudaPart}`,
  );
}
