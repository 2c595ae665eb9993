import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { extractBlocks, findMarkdownFiles } from './readme-blocks.js';

const FENCE = '```';

describe('extractBlocks', () => {
  test('finds ts and js blocks with the line of the opening fence', () => {
    const markdown = [
      '# Title', // 1
      '', // 2
      `${FENCE}ts`, // 3
      "import { ones } from '@flodl/tensor-native';", // 4
      `${FENCE}`, // 5
      '', // 6
      `${FENCE}sh`, // 7
      'npm test', // 8
      `${FENCE}`, // 9
      `${FENCE}javascript`, // 10
      'console.log(1);', // 11
      `${FENCE}`, // 12
    ].join('\n');
    expect(extractBlocks(markdown, 'README.md')).toEqual([
      {
        file: 'README.md',
        line: 3,
        language: 'ts',
        fragment: false,
        code: "import { ones } from '@flodl/tensor-native';\n",
      },
      { file: 'README.md', line: 10, language: 'js', fragment: false, code: 'console.log(1);\n' },
    ]);
  });

  test('honours the fragment tag after the language, and only there', () => {
    const markdown = [
      `${FENCE}ts fragment`,
      'model.forward(x);',
      `${FENCE}`,
      `${FENCE}typescript title="fragment.ts"`,
      'const a = 1;',
      `${FENCE}`,
      `${FENCE}fragment`,
      'not a ts block',
      `${FENCE}`,
    ].join('\n');
    const blocks = extractBlocks(markdown, 'a.md');
    expect(blocks.map(({ line, language, fragment }) => ({ line, language, fragment }))).toEqual([
      { line: 1, language: 'ts', fragment: true },
      { line: 4, language: 'ts', fragment: false },
    ]);
  });

  test('a block in a list item loses the fence indentation; a longer fence holds a shorter one', () => {
    const markdown = [
      '- item',
      `  ${FENCE}js`,
      '  const a = 1;',
      '    const b = 2;',
      `  ${FENCE}`,
      '````md',
      `${FENCE}ts`,
      'inside markdown',
      `${FENCE}`,
      '````',
      '~~~ts',
      'const c = 3;',
      '~~~',
    ].join('\r\n');
    const blocks = extractBlocks(markdown, 'b.md');
    expect(blocks).toEqual([
      { file: 'b.md', line: 2, language: 'js', fragment: false, code: 'const a = 1;\n  const b = 2;\n' },
      { file: 'b.md', line: 11, language: 'ts', fragment: false, code: 'const c = 3;\n' },
    ]);
  });

  test('an unclosed fence runs to the end and opens nothing inside it', () => {
    const blocks = extractBlocks(['```sh', 'echo', '```ts', 'x'].join('\n'), 'c.md');
    expect(blocks).toEqual([]);
  });
});

describe('findMarkdownFiles', () => {
  test('every README.md and docs/**/*.md, outside hidden folders, node_modules and dist', () => {
    const root = mkdtempSync(join(tmpdir(), 'flodl-readme-'));
    try {
      for (const file of [
        'README.md',
        'packages/a/README.md',
        'packages/a/CHANGELOG.md',
        'packages/a/node_modules/b/README.md',
        'packages/a/dist/README.md',
        'apps/examples/x/README.md',
        'apps/examples/.readme-blocks/README.md',
        '.changeset/README.md',
        'docs/guide.md',
        'docs/benchmarks/notes.md',
      ]) {
        mkdirSync(join(root, file, '..'), { recursive: true });
        writeFileSync(join(root, file), '# x\n');
      }
      expect(findMarkdownFiles(root)).toEqual([
        'README.md',
        'apps/examples/x/README.md',
        'docs/benchmarks/notes.md',
        'docs/guide.md',
        'packages/a/README.md',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
