// Every complete ts/js block of every README (and docs/*.md) runs as written: each is written to
// .readme-blocks/ (inside this package, where the @flodl/* imports resolve), run in a child
// process from its own folder (files it writes land there), and fails with the file, the line of
// its fence and the child's stderr. The ts blocks are also type-checked together, once.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { type ReadmeBlock, readmeBlocks } from './readme-blocks.js';

const examplesDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const root = join(examplesDir, '..', '..');
const scratch = join(examplesDir, '.readme-blocks');
const BLOCK_TIMEOUT_MS = 90_000;
// Blocks that train on Fashion-MNIST skip without Debian's dataset-fashion-mnist, as the data tests do.
const FASHION_MNIST = '/usr/share/datasets/fashion-mnist';
const hasFashionMnist = existsSync(FASHION_MNIST);

const blocks = readmeBlocks(root);
const complete = blocks.filter((block) => !block.fragment);
rmSync(scratch, { recursive: true, force: true });
const written = complete.map((block) => ({ block, ...writeBlock(block) }));

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** A folder name from the block's place: `packages-nn-README.md-12`. */
function slug(block: ReadmeBlock): string {
  return `${block.file.replace(/[^\w.-]+/g, '-')}-${block.line}`;
}

function writeBlock(block: ReadmeBlock): { folder: string; path: string } {
  const folder = join(scratch, slug(block));
  mkdirSync(folder, { recursive: true });
  const path = join(folder, block.language === 'ts' ? 'block.ts' : 'block.mjs');
  writeFileSync(path, block.code);
  return { folder, path };
}

function run(command: string, args: string[], cwd: string, timeout: number): Promise<ChildResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd,
        timeout,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, FLODL_PROGRESS: '0', NO_COLOR: '1' },
      },
      (error, stdout, stderr) => {
        const failure = error as
          | (NodeJS.ErrnoException & { killed?: boolean; signal?: NodeJS.Signals })
          | null;
        resolve({
          code: failure === null ? 0 : typeof failure.code === 'number' ? failure.code : null,
          signal: failure?.signal ?? null,
          stdout,
          stderr,
          timedOut: failure?.killed === true,
        });
      },
    );
  });
}

function failureText(where: string, result: ChildResult): string {
  const how = result.timedOut
    ? `did not finish in ${BLOCK_TIMEOUT_MS / 1000} s`
    : result.signal !== null
      ? `was killed by ${result.signal}`
      : `exited with code ${result.code}`;
  const stderr = result.stderr.trim() === '' ? '(stderr empty)' : result.stderr.trimEnd();
  return `${where} ${how}; its stderr:\n${stderr}`;
}

const tsc = createRequire(join(examplesDir, 'package.json')).resolve('typescript/bin/tsc');

describe.concurrent('README code blocks run as written', () => {
  test('every README is read and its blocks found', () => {
    expect(blocks.length).toBeGreaterThan(0);
    expect(complete.length).toBeGreaterThan(0);
  });

  for (const { block, folder, path } of written) {
    const skip = !hasFashionMnist && block.code.includes('FashionMnist');
    test.skipIf(skip)(`${block.file}:${block.line}`, async () => {
      const args = block.language === 'ts' ? ['--import', 'tsx', path] : [path];
      const result = await run(process.execPath, args, folder, BLOCK_TIMEOUT_MS);
      if (result.code !== 0 || result.signal !== null) {
        throw new Error(failureText(`${block.file}:${block.line} (${block.language})`, result));
      }
    });
  }

  const typescript = written.filter(({ block }) => block.language === 'ts');
  test.skipIf(typescript.length === 0)('the ts blocks type-check (tsc --noEmit)', async () => {
    const project = join(scratch, 'tsconfig.json');
    writeFileSync(
      project,
      JSON.stringify({
        extends: '../tsconfig.json',
        compilerOptions: { noEmit: true, moduleDetection: 'force' },
        include: ['*/block.ts'],
        exclude: [],
      }),
    );
    const result = await run(process.execPath, [tsc, '-p', project], scratch, BLOCK_TIMEOUT_MS);
    if (result.code !== 0) {
      // tsc reports by the scratch file (`<slug>/block.ts(3,5)`): name the README line instead.
      const bySlug = new Map(typescript.map(({ block }) => [slug(block), block]));
      const report = result.stdout.replace(
        /([\w.-]+)\/block\.ts\((\d+),(\d+)\)/g,
        (text, name, line, column) => {
          const block = bySlug.get(name);
          return block === undefined ? text : `${block.file}:${block.line + Number(line)}:${column}`;
        },
      );
      throw new Error(
        failureText('tsc over the ts blocks', { ...result, stderr: `${report}${result.stderr}` }),
      );
    }
  });
});
