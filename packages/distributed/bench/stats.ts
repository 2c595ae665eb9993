// Small helpers shared by the distributed benchmarks: clocks, medians, argument parsing, JSON out.
import { writeFileSync } from 'node:fs';

/** Milliseconds since an arbitrary origin, sub-microsecond resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** The median of `values` (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((left, right) => left - right);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** `--name value` and `--flag` pairs of `argv`, as strings. */
export function parseArgs(argv: readonly string[]): Map<string, string> {
  const options = new Map<string, string>();
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] as string;
    if (!arg.startsWith('--')) continue;
    const next = argv[index + 1];
    if (next === undefined || next.startsWith('--')) options.set(arg.slice(2), 'true');
    else {
      options.set(arg.slice(2), next);
      index += 1;
    }
  }
  return options;
}

/** A positive integer option, or `fallback`. */
export function intOption(options: Map<string, string>, name: string, fallback: number): number {
  const raw = options.get(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name}: expected a positive integer, got ${raw}`);
  return value;
}

/** Writes `result` as JSON to `path` when one is given. */
export function writeJson(path: string | undefined, result: unknown): void {
  if (path) writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** `1234.5` as `1234.5`, `0.01234` as `0.0123`: three significant digits at least. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  return value.toPrecision(3);
}

/** A markdown table of `rows` under `header`, columns right-aligned except the first. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] as number) : cell.padStart(widths[column] as number))).join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (column === 0 ? '-'.repeat(width) : `${'-'.repeat(width - 1)}:`)).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}
