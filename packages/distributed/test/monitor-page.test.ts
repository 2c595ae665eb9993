// The dashboard without a browser: the page is one document whose data cannot end its script
// tag, the server's endpoints and methods, the live stream's first event, and its option checks.
import { describe, expect, it } from 'vitest';
import { isLoopback, RunRecorder, RunState, startDashboard } from '../src/monitor/index.js';
import { renderPage } from '../src/monitor/page.js';

describe('dashboard page and server', () => {
  it('renders one document; a hostile run name cannot close its script or inject markup', () => {
    const state = new RunState();
    state.apply({
      kind: 'run',
      t: 0,
      version: 1,
      worldSize: 1,
      name: '</script><img src=x onerror=alert(1)>',
    });
    const html = renderPage(
      '<b>title</b>',
      { kind: 'report', state: state.snapshot },
      { script: 'void 0;', css: 'body{}' },
    );
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    expect(html).not.toContain('<img');
    expect(html).toContain('<title>&#60;b&#62;title&#60;/b&#62;</title>');
    expect(html).toContain('\\u003c/script>\\u003cimg');
  });

  it('serves the page, the state and the stream read-only on loopback', async () => {
    const recorder = new RunRecorder({ run: { name: 'served', worldSize: 2 } });
    const dashboard = await startDashboard({ recorder, announce: false });
    try {
      expect(dashboard.token).toBeUndefined();
      expect(dashboard.url).toBe(`http://127.0.0.1:${dashboard.port}/`);
      const page = await fetch(dashboard.url);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await page.text()).toContain('<title>served</title>');
      recorder.record({ kind: 'step', rank: 1, step: 1, loss: 0.5, stepMs: 3 });
      const state = (await (
        await fetch(new URL('state.json', dashboard.url))
      ).json()) as RunState['snapshot'];
      expect(state.ranks.map((rank) => rank.status)).toEqual(['starting', 'training']);
      for (const method of ['POST', 'PUT', 'DELETE'])
        expect((await fetch(new URL('state.json', dashboard.url), { method })).status, method).toBe(405);
      expect((await fetch(new URL('nothing', dashboard.url))).status).toBe(404);

      // The stream: the whole state first, then each record as it is kept.
      const controller = new AbortController();
      const events = await fetch(new URL('events', dashboard.url), { signal: controller.signal });
      expect(events.headers.get('content-type')).toBe('text/event-stream');
      const reader = events.body!.getReader();
      let text = '';
      const readUntil = async (pattern: RegExp) => {
        while (!pattern.test(text)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`the stream ended before ${pattern}: ${text}`);
          text += new TextDecoder().decode(value);
        }
      };
      await readUntil(/^event: state\ndata: .*\n\n/);
      recorder.record({ kind: 'eval', epoch: 0, metric: 0.25 });
      await readUntil(/\ndata: \{"kind":"eval".*\n\n/);
      controller.abort();
    } finally {
      await dashboard.close();
    }
  });

  it('checks its options and names loopback addresses', async () => {
    expect(['127.0.0.1', '127.8.0.3', 'localhost', '::1'].map(isLoopback)).toEqual([true, true, true, true]);
    expect(['0.0.0.0', '10.0.0.2', '::', 'example.org'].map(isLoopback)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    const recorder = new RunRecorder();
    await expect(startDashboard({ recorder, port: 70_000 })).rejects.toThrow(/invalid port/);
    await expect(startDashboard({ recorder: {} as RunRecorder })).rejects.toThrow(/invalid recorder/);
    await expect(startDashboard({ recorder, colour: 'blue' } as never)).rejects.toThrow(
      /unknown option 'colour'/,
    );
  });
});
