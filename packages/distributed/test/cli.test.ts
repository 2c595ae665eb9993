import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { CLI_USAGE, parseLaunchArgs, USAGE } from '../src/launcher/cli.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'bin', 'flodl.mjs');
const version = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')).version as string;

function flodl(...args: string[]) {
  return spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
}

describe('flodl command line', () => {
  it('takes --flag value and --flag=value alike, and passes everything after the script to it', () => {
    const spaced = parseLaunchArgs([
      'launch',
      '--nproc',
      '3',
      '--mode',
      'CpuSync',
      'train.js',
      '--lr',
      '0.1',
    ]);
    const joined = parseLaunchArgs(['launch', '--nproc=3', '--mode=CpuSync', 'train.js', '--lr', '0.1']);
    expect(spaced).toEqual(joined);
    expect(spaced).toEqual({
      kind: 'launch',
      options: { nproc: 3, mode: 'CpuSync', script: 'train.js', args: ['--lr', '0.1'] },
    });
    expect(parseLaunchArgs(['launch', '--nproc', '2', '--', '-script.js', '--x'])).toEqual({
      kind: 'launch',
      options: { nproc: 2, script: '-script.js', args: ['--x'] },
    });
  });

  it("--dashboard PORT asks for the dashboard of the launcher's coordinator", () => {
    expect(parseLaunchArgs(['launch', '--nproc', '2', '--dashboard', '8080', 'train.js'])).toEqual({
      kind: 'launch',
      options: { nproc: 2, script: 'train.js', args: [] },
      dashboard: 8080,
    });
    expect(() => parseLaunchArgs(['launch', '--nproc', '2', '--dashboard', '70000', 'train.js'])).toThrow(
      /--dashboard/,
    );
    expect(() => parseLaunchArgs(['launch', '--nproc', '2', '--dashboard', 'x', 'train.js'])).toThrow(
      /--dashboard/,
    );
  });

  it('names a bad, unknown or valueless flag', () => {
    expect(() => parseLaunchArgs(['launch', '--nproc', '2', '--bogus', 's.js'])).toThrow(
      /unknown flag --bogus/,
    );
    expect(() => parseLaunchArgs(['launch', '--nproc'])).toThrow(/--nproc needs a value/);
    expect(() => parseLaunchArgs(['launch', '--elastic=yes', '--nproc', '2', 's.js'])).toThrow(
      /--elastic takes no value/,
    );
    expect(() => parseLaunchArgs(['launch', '--nproc', '0', 's.js'])).toThrow(
      /--nproc takes a whole number of ranks >= 1, got 0/,
    );
    expect(() => parseLaunchArgs(['launch', '--nproc', '2'])).toThrow(/no script given/);
    expect(() => parseLaunchArgs(['train'])).toThrow(/unknown command "train"/);
  });

  it('says what each numeric flag takes, a negative value included (not "argument is ambiguous")', () => {
    const refused = (...flags: string[]) =>
      caught(() => parseLaunchArgs(['launch', ...flags, 's.js'])).message;
    expect(refused('--nproc', '-1')).toMatchInlineSnapshot(`
      "flodl launch: --nproc takes a whole number of ranks >= 1, got -1
        expected: e.g. --nproc 2"
    `);
    expect(refused('--nproc', '2.5')).toMatchInlineSnapshot(`
      "flodl launch: --nproc takes a whole number of ranks >= 1, got 2.5
        expected: e.g. --nproc 2"
    `);
    expect(refused('--nproc', '2', '--nnodes', '0')).toMatchInlineSnapshot(`
      "flodl launch: --nnodes takes a whole number of hosts >= 1, got 0
        expected: e.g. --nnodes 2"
    `);
    expect(
      refused('--nproc', '2', '--nnodes', '2', '--node-rank', '2', '--coordinator', 'h:1'),
    ).toMatchInlineSnapshot(`
      "flodl launch: --node-rank takes this host's index in 0..1 (--nnodes 2), got 2
        expected: e.g. --node-rank 0 on the host of the coordinator"
    `);
    expect(refused('--nproc', '2', '--node-rank', '-1')).toMatchInlineSnapshot(`
      "flodl launch: --node-rank takes this host's index in 0..0 (--nnodes 1), got -1
        expected: e.g. --node-rank 0 on the host of the coordinator"
    `);
    expect(refused('--nproc', '2', '--port', '70000')).toMatchInlineSnapshot(`
      "flodl launch: --port takes a port in 0..65535, got 70000
        expected: e.g. --port 29500 (0: a free port)"
    `);
    expect(refused('--nproc', '2', '--timeout-ms', '-5')).toMatchInlineSnapshot(`
      "flodl launch: --timeout-ms takes a whole number of milliseconds >= 1, got -5
        expected: e.g. --timeout-ms 600000"
    `);
    expect(refused('--nproc', '2', '--liveness-ms=100')).toMatchInlineSnapshot(`
      "flodl launch: --liveness-ms takes a whole number of milliseconds >= 500, got 100
        expected: e.g. --liveness-ms 30000"
    `);
    expect(refused('--nproc', '2', '--elastic', '--max-failure', '-1')).toMatchInlineSnapshot(`
      "flodl launch: --max-failure takes a whole number of ranks >= 1 or a percentage in (0, 100], got -1
        expected: e.g. --max-failure 1 or --max-failure 25%"
    `);
    expect(refused('--nproc', '2', '--elastic', '--max-failure', '150%')).toMatchInlineSnapshot(`
      "flodl launch: --max-failure takes a whole number of ranks >= 1 or a percentage in (0, 100], got 150%
        expected: e.g. --max-failure 1 or --max-failure 25%"
    `);
    expect(refused('--nproc', '2', '--dashboard', '-1')).toMatchInlineSnapshot(`
      "flodl launch: --dashboard takes a port in 0..65535, got -1
        expected: e.g. --dashboard 8080 (0: a free port)"
    `);
    expect(refused('--nproc', '--port', '1')).toMatchInlineSnapshot(`
      "flodl launch: --nproc needs a value (got the next flag instead)
        expected: one of the flags below"
    `);
    // The command line itself: exit code 2, the message, then the usage.
    const result = flodl('launch', '--nproc', '-1', 's.js');
    expect(result.status).toBe(2);
    expect(result.stderr.split('\n').slice(0, 2).join('\n')).toMatchInlineSnapshot(`
      "flodl: flodl launch: --nproc takes a whole number of ranks >= 1, got -1
        expected: e.g. --nproc 2"
    `);
  });

  it('prints per-command help and the version', () => {
    expect(parseLaunchArgs([])).toEqual({ kind: 'help' });
    expect(parseLaunchArgs(['help', 'launch'])).toEqual({ kind: 'help', topic: 'launch' });
    expect(parseLaunchArgs(['launch', '-h'])).toEqual({ kind: 'help', topic: 'launch' });
    const general = flodl('--help');
    expect(general.status).toBe(0);
    expect(general.stdout.trim()).toBe(CLI_USAGE);
    const launchHelp = flodl('launch', '--help');
    expect(launchHelp.status).toBe(0);
    expect(launchHelp.stdout.trim()).toBe(USAGE);
    const printed = flodl('--version');
    expect(printed.status).toBe(0);
    expect(printed.stdout.trim()).toBe(`flodl ${version}`);
  });

  it('exits 2 with the usage on a usage error', () => {
    const result = flodl('launch', '--nproc', '2', '--bogus', 's.js');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('unknown flag --bogus');
    expect(result.stderr).toContain('usage: flodl launch');
  });
});
