import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LineSplitter, launch, parseLaunchArgs, prefixLines, rankPrefix } from '../src/launcher/index.js';
import './fixtures/cluster-setup.js'; // runs the .ts rank fixtures through this package's tsx

const here = dirname(fileURLToPath(import.meta.url));
const outputRank = join(here, 'fixtures', 'output-rank.ts');
const bin = join(here, '..', 'bin', 'flodl.mjs');

function splitter(prefix = '[r] ', maxLineBytes?: number): { lines: LineSplitter; emitted: string[] } {
  const emitted: string[] = [];
  const lines = new LineSplitter((text) => emitted.push(text.toString('utf8')), {
    prefix,
    ...(maxLineBytes === undefined ? {} : { maxLineBytes }),
  });
  return { lines, emitted };
}

describe('LineSplitter', () => {
  it('passes on whole lines only, joining lines split across chunks', () => {
    const { lines, emitted } = splitter();
    lines.write('one\ntw');
    lines.write('o');
    expect(emitted).toEqual(['[r] one\n']);
    lines.write('\nthree\nfour\n');
    // every line a chunk completes goes out in one call
    expect(emitted).toEqual(['[r] one\n', '[r] two\n[r] three\n[r] four\n']);
    expect(lines.pendingBytes).toBe(0);
  });

  it('flushes an unfinished last line on end, with a newline, and nothing when there is none', () => {
    const { lines, emitted } = splitter();
    lines.write('done\npartial');
    lines.end();
    expect(emitted).toEqual(['[r] done\n', '[r] partial\n']);
    lines.end();
    expect(emitted).toHaveLength(2);
  });

  it('keeps empty lines and carriage returns, and multi-byte characters split across chunks', () => {
    const { lines, emitted } = splitter();
    const bytes = Buffer.from('é✓\n');
    lines.write('\r\n\n');
    lines.write(bytes.subarray(0, 1));
    lines.write(bytes.subarray(1, 3));
    lines.write(bytes.subarray(3));
    expect(emitted).toEqual(['[r] \r\n[r] \n', '[r] é✓\n']);
  });

  it('copies the bytes it holds back (a reused chunk does not change them)', () => {
    const { lines, emitted } = splitter('');
    const chunk = Buffer.from('abc');
    lines.write(chunk);
    chunk.write('xyz');
    lines.write(new Uint8Array([0x0a]));
    expect(emitted).toEqual(['abc\n']);
  });

  it('bounds what it holds back: an endless line goes out in maxLineBytes pieces', () => {
    const { lines, emitted } = splitter('> ', 4);
    lines.write('abcdefghij');
    expect(emitted).toEqual(['> abcd\n> efgh\n']);
    expect(lines.pendingBytes).toBe(2);
    lines.write('k\n');
    expect(emitted.at(-1)).toBe('> ijk\n');
    expect(() => new LineSplitter(() => undefined, { maxLineBytes: 0 })).toThrow(/maxLineBytes/);
  });
});

describe('prefixLines', () => {
  it('copies a stream line by line and flushes the last line when it ends', async () => {
    const source = new PassThrough();
    const written: string[] = [];
    const done = prefixLines(
      source,
      { write: (text) => written.push(Buffer.from(text).toString()) },
      rankPrefix(3),
    );
    source.write('a\nb');
    source.end('c');
    await done;
    expect(written.join('')).toBe('[rank 3] a\n[rank 3] bc\n');
  });
});

describe('launch with prefixed output', () => {
  it('rejects prefixOutput without inherited stdio, and parses --no-prefix', async () => {
    await expect(
      launch({ nproc: 1, script: outputRank, stdio: 'ignore', prefixOutput: true }),
    ).rejects.toThrow(/invalid prefixOutput/);
    await expect(launch({ nproc: 1, script: outputRank, prefixOutput: 'yes' as never })).rejects.toThrow(
      /invalid prefixOutput/,
    );
    expect(parseLaunchArgs(['launch', '--no-prefix', '--nproc', '2', 's.js'])).toEqual({
      kind: 'launch',
      options: { prefixOutput: false, nproc: 2, script: 's.js', args: [] },
    });
  });

  it('never mixes two ranks within a line, on stdout and stderr, and flushes unfinished lines', () => {
    const lines = 40;
    const result = spawnSync(process.execPath, [bin, 'launch', '--nproc', '3', outputRank, String(lines)], {
      encoding: 'utf8',
      timeout: 30_000,
      env: process.env,
    });
    expect(result.status).toBe(0);
    const stdout = result.stdout.split('\n');
    expect(stdout.pop()).toBe('');
    const filler = 'x'.repeat(3000);
    for (const rank of [0, 1, 2]) {
      const own = stdout.filter((line) => line.startsWith(`[rank ${rank}] `));
      expect(own).toEqual([
        ...Array.from(
          { length: lines },
          (_, index) => `[rank ${rank}] rank ${rank} line ${index}: ${filler}`,
        ),
        `[rank ${rank}] tail of rank ${rank} ✓`,
      ]);
      const errors = result.stderr.split('\n').filter((line) => line.startsWith(`[rank ${rank}] `));
      expect(errors).toEqual(
        Array.from({ length: lines }, (_, index) => `[rank ${rank}] rank ${rank} error ${index}`),
      );
    }
    expect(stdout).toHaveLength(3 * (lines + 1));
  });
});
