// The code blocks of the project's Markdown: every fenced block tagged ts, typescript, js or
// javascript is either a complete program (run by readme-blocks.test.ts) or says `fragment`
// after its language (```ts fragment), which GitHub and npm render by the first word alone.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** One fenced TypeScript or JavaScript block of a Markdown file. */
export interface ReadmeBlock {
  /** The Markdown file, relative to the root it was found under (`/`-separated). */
  readonly file: string;
  /** The 1-based line of the opening fence. */
  readonly line: number;
  /** `ts` for ts and typescript, `js` for js and javascript. */
  readonly language: 'ts' | 'js';
  /** Whether the info string says `fragment` after the language: an excerpt, not run. */
  readonly fragment: boolean;
  /** The block's text, without the fences and without the fence's own indentation. */
  readonly code: string;
}

const LANGUAGES: Readonly<Record<string, 'ts' | 'js'>> = {
  ts: 'ts',
  typescript: 'ts',
  js: 'js',
  javascript: 'js',
};

// A fence: up to the list item's indentation, three or more backticks or tildes, an info string.
const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;

/**
 * The ts and js blocks of one Markdown text, in order, with the line of each opening fence.
 * Blocks of other languages and unclosed fences (which run to the end of the text, as in
 * CommonMark) are read the same way, so their contents never open a block of their own.
 *
 * @param markdown - the file's text
 * @param file - the name the blocks carry (a path relative to the repository root)
 * @example
 * ```ts fragment
 * extractBlocks('```js\nconsole.log(1);\n```\n', 'README.md');
 * // [{ file: 'README.md', line: 1, language: 'js', fragment: false, code: 'console.log(1);\n' }]
 * ```
 */
export function extractBlocks(markdown: string, file: string): ReadmeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: ReadmeBlock[] = [];
  let index = 0;
  while (index < lines.length) {
    const open = FENCE.exec(lines[index] ?? '');
    if (open === null) {
      index += 1;
      continue;
    }
    const indent = open[1] ?? '';
    const fence = open[2] ?? '```';
    const info = (open[3] ?? '').trim().split(/\s+/);
    const body: string[] = [];
    let end = index + 1;
    for (; end < lines.length; end++) {
      const close = FENCE.exec(lines[end] ?? '');
      if (close !== null && close[2]?.[0] === fence[0] && (close[2]?.length ?? 0) >= fence.length) {
        if ((close[3] ?? '').trim() === '') break;
      }
      body.push(stripIndent(lines[end] ?? '', indent.length));
    }
    const language = LANGUAGES[(info[0] ?? '').toLowerCase()];
    if (language !== undefined) {
      blocks.push({
        file,
        line: index + 1,
        language,
        fragment: info.slice(1).includes('fragment'),
        code: body.length === 0 ? '' : `${body.join('\n')}\n`,
      });
    }
    index = end + 1;
  }
  return blocks;
}

/** Removes up to `width` leading spaces: a block inside a list item is indented with it. */
function stripIndent(line: string, width: number): string {
  let cut = 0;
  while (cut < width && line[cut] === ' ') cut += 1;
  return line.slice(cut);
}

const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'build', 'coverage', 'test-output']);

/**
 * The Markdown files whose blocks are checked, relative to `root` and sorted: every
 * `README.md` and every `.md` under `docs/`, outside hidden folders (`.git`, `.changeset`,
 * `.tools`, the blocks' own scratch folder), `node_modules`, `dist` and `build`.
 *
 * @param root - the repository root
 */
export function findMarkdownFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDERS.has(entry.name)) walk(path);
        continue;
      }
      if (!entry.isFile() || !entry.name.endsWith('.md')) continue;
      const name = relative(root, path).split('\\').join('/');
      if (entry.name === 'README.md' || name.startsWith('docs/')) found.push(name);
    }
  };
  walk(root);
  return found.sort();
}

/** The ts and js blocks of every file {@link findMarkdownFiles} finds under `root`. */
export function readmeBlocks(root: string): ReadmeBlock[] {
  return findMarkdownFiles(root).flatMap((file) =>
    extractBlocks(readFileSync(join(root, file), 'utf8'), file),
  );
}
