import { describe, expect, it } from 'vitest';
import { LibtorchLogFilter } from '../src/libtorch-log.js';

const NOTICE = 'WARNING: Logging before InitGoogleLogging() is written to STDERR\n';
const BETA =
  'W20261201 17:53:14.052937 14459 TensorAdvancedIndexing.cpp:1615] Warning: scatter_reduce() is in beta and the API may change at any time. (function operator())\n';
const OTHER =
  "W20261201 17:53:15.000001   901 Convolution.cpp:1036] Warning: Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of the input be created (function _convolution_mode)\n";

async function filtered(
  chunks: string[],
  expected: RegExp[],
): Promise<{ text: string; filter: LibtorchLogFilter }> {
  const filter = new LibtorchLogFilter(expected);
  const parts: Buffer[] = [];
  filter.on('data', (part: Buffer) => parts.push(Buffer.from(part)));
  const ended = new Promise((resolve) => filter.on('end', resolve));
  for (const chunk of chunks) filter.write(chunk);
  filter.end();
  await ended;
  return { text: Buffer.concat(parts).toString('utf8'), filter };
}

describe('LibtorchLogFilter', () => {
  it('holds back an expected libtorch log line and the glog notice before it', async () => {
    const { text, filter } = await filtered(
      [`before\n${NOTICE}${BETA}after\n`],
      [/scatter_reduce\(\) is in beta/],
    );
    expect(text).toBe('before\nafter\n');
    expect(filter.counts).toEqual({ held: 1, passed: 0 });
  });

  it('passes an unexpected libtorch log line through with its notice, in order', async () => {
    const { text, filter } = await filtered([NOTICE, OTHER, BETA], [/scatter_reduce\(\) is in beta/]);
    expect(text).toBe(`${NOTICE}${OTHER}`);
    expect(filter.counts).toEqual({ held: 1, passed: 1 });
  });

  it('matches lines split across chunks and passes other output unchanged', async () => {
    const { text } = await filtered(
      [BETA.slice(0, 30), BETA.slice(30), 'Error: a real failure', '\nno newline at the end'],
      [/scatter_reduce\(\) is in beta/],
    );
    expect(text).toBe('Error: a real failure\nno newline at the end');
  });

  it('passes everything when nothing is expected', async () => {
    const { text, filter } = await filtered([NOTICE, BETA], []);
    expect(text).toBe(`${NOTICE}${BETA}`);
    expect(filter.counts).toEqual({ held: 0, passed: 1 });
  });
});
