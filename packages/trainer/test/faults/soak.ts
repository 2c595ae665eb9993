// The whole fault matrix (every mode × every fault), a few scenarios at a time, then a
// Markdown table of the outcomes (the one in the distributed README). `pnpm soak:faults`;
// `--concurrency N` (default 3), `--only <text>` to run the scenarios whose name or mode
// holds it, `--repeat N` to run the matrix N times, `--log <file>` to append each outcome
// (with the run's stderr when it failed) as a JSON line. Exits non-zero when any scenario failed.
import { appendFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { checkScenario, fullMatrix, RECOVERY_BOUND_MS, type ScenarioRow } from './matrix.js';
import { runScenario } from './scenario.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((argument) => argument !== '--'),
  options: {
    concurrency: { type: 'string', default: String(Math.max(1, Math.min(3, availableParallelism()))) },
    only: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    log: { type: 'string' },
  },
});
const concurrency = Number(values.concurrency);
const repeat = Number(values.repeat);
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('--concurrency needs an integer ≥ 1');
if (!Number.isInteger(repeat) || repeat < 1) throw new Error('--repeat needs an integer ≥ 1');
const scenarios = fullMatrix().filter(
  (scenario) => !values.only || `${scenario.mode} ${scenario.name}`.includes(values.only),
);
const queue = Array.from({ length: repeat }, () => scenarios).flat();
const rows: ScenarioRow[] = [];
const started = Date.now();
async function worker(): Promise<void> {
  for (let next = queue.shift(); next; next = queue.shift()) {
    const outcome = await runScenario(next.config);
    const row = checkScenario(next, outcome);
    if (values.log) {
      const stderr = row.problems.length > 0 ? outcome.stderr.slice(-6000) : undefined;
      appendFileSync(
        values.log,
        `${JSON.stringify({ ...row, fault: outcome.fault, lost: outcome.result?.lost, stderr })}\n`,
      );
    }
    outcome.cleanup();
    rows.push(row);
    const verdict = row.problems.length === 0 ? 'ok' : `FAILED: ${row.problems.join('; ')}`;
    process.stdout.write(
      `${row.mode} ${row.name}: ${verdict} (handled ${row.handledMs ?? '-'} ms, ended ${row.recoveryMs ?? '-'} ms)\n`,
    );
  }
}
await Promise.all(Array.from({ length: concurrency }, () => worker()));
const names = [...new Set(scenarios.map((scenario) => scenario.name))];
const modes = [...new Set(scenarios.map((scenario) => scenario.mode))];
const cell = (name: string, mode: string): string => {
  const mine = rows.filter((row) => row.name === name && row.mode === mode);
  if (mine.length === 0) return '–';
  const failed = mine.filter((row) => row.problems.length > 0).length;
  const worst = Math.max(...mine.map((row) => row.recoveryMs ?? 0));
  return failed > 0 ? `**failed** ${failed}/${mine.length}` : `ok, ${(worst / 1000).toFixed(1)} s`;
};
process.stdout.write(
  `\n| scenario | ${modes.join(' | ')} |\n|---|${modes.map(() => '---').join('|')}|\n${names
    .map((name) => `| ${name} | ${modes.map((mode) => cell(name, mode)).join(' | ')} |`)
    .join('\n')}\n\n`,
);
const outcomes = [...new Set(rows.map((row) => `${row.name}: ${row.outcome}`))];
process.stdout.write(`${outcomes.map((line) => `- ${line}`).join('\n')}\n`);
const failures = rows.filter((row) => row.problems.length > 0);
process.stdout.write(
  `\n${rows.length - failures.length}/${rows.length} scenarios ended well (bound ${RECOVERY_BOUND_MS} ms after the fault) in ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
);
process.exitCode = failures.length > 0 ? 1 : 0;
