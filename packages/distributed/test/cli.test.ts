import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

  it('names a bad, unknown or valueless flag', () => {
    expect(() => parseLaunchArgs(['launch', '--nproc', '2', '--bogus', 's.js'])).toThrow(
      /unknown flag --bogus/,
    );
    expect(() => parseLaunchArgs(['launch', '--nproc'])).toThrow(/--nproc needs a value/);
    expect(() => parseLaunchArgs(['launch', '--elastic=yes', '--nproc', '2', 's.js'])).toThrow(
      /--elastic takes no value/,
    );
    expect(() => parseLaunchArgs(['launch', '--nproc', '0', 's.js'])).toThrow(/bad --nproc "0"/);
    expect(() => parseLaunchArgs(['launch', '--nproc', '2'])).toThrow(/no script given/);
    expect(() => parseLaunchArgs(['train'])).toThrow(/unknown command "train"/);
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
