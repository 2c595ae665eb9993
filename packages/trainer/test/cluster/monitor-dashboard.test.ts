// The dashboard in a real browser: a 2-rank CPU run (CpuCadence, loopback, ranks of unequal speed)
// observed by the launcher with the metrics log and the dashboard on; headless Chromium (Debian's
// /usr/bin/chromium through playwright-core) opens the page, sees the loss chart gain points while
// the run goes on and both ranks in the table, and saves screenshots into test-output/dashboard/;
// then the same for the saved report, and the token: bound off loopback, no token, no page.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type Dashboard,
  observe,
  type RunRecorder,
  readMetricsLog,
  saveReport,
  startDashboard,
} from '@flodl/distributed';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runObserved } from './fixtures/observed-run.js';

// FLODL_CHROMIUM points at another Chromium build.
const CHROMIUM = process.env.FLODL_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const why = available ? '' : ` (skipped: ${CHROMIUM} is absent; 'npm run setup' installs Debian's chromium)`;
// The reason shows in the run's output: vitest lists a skipped file without its tests' names.
if (!available) console.log(`dashboard browser test${why}`);
const OUTPUT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-output', 'dashboard');

const scratch = mkdtempSync(join(tmpdir(), 'flodl-dashboard-'));
let browser: BrowserContext | undefined;

beforeAll(async () => {
  if (!available) return;
  mkdirSync(OUTPUT, { recursive: true });
  browser = await chromium.launchPersistentContext(join(scratch, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    viewport: { width: 1280, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const pointsOf = (id: string) => `Number(document.getElementById('${id}')?.dataset.points ?? 0)`;

describe.skipIf(!available)(`dashboard in headless Chromium${why}`, () => {
  it('shows a live 2-rank run: the loss chart gains points while it runs, both ranks listed; then its report', async () => {
    const page = await browser!.newPage();
    const logPath = join(scratch, 'run.jsonl');
    let recorder: RunRecorder | undefined;
    let opened: Promise<Dashboard> | undefined;
    let live: { before: number; after: number; finishedBefore: boolean } | undefined;
    let watching: Promise<void> | undefined;

    const run = runObserved({
      mode: 'CpuCadence',
      nproc: 2,
      totalSamples: 1536,
      batchSize: 16,
      numEpochs: 4,
      anchor: 4,
      rank: { stepDelayMs: [8, 16] },
      evalEvery: 1,
      timeoutMs: 60_000,
      onHost: (host) => {
        recorder = observe(host, { log: logPath, stepEvery: 2, run: { name: 'dashboard test' } }).recorder;
        opened = startDashboard({ recorder, announce: false });
        // While the run goes on: open the page, read the loss chart twice, the second time with more points.
        watching = opened.then(async (dashboard) => {
          await page.goto(dashboard.url);
          await page.waitForFunction(`${pointsOf('chart-loss')} > 0`, undefined, { timeout: 30_000 });
          const before = (await page.evaluate(pointsOf('chart-loss'))) as number;
          const finishedBefore = host.finished;
          await page.waitForFunction(`${pointsOf('chart-loss')} > ${before}`, undefined, { timeout: 30_000 });
          live = { before, after: (await page.evaluate(pointsOf('chart-loss'))) as number, finishedBefore };
        });
      },
    });
    const { host, error, hostErrors } = await run;
    await watching;
    const dashboard = await opened!;
    try {
      expect(error).toBeUndefined();
      expect(hostErrors).toEqual([]);
      expect(host.coordinator.finishReason).toBe('Completed');
      expect(live!.finishedBefore).toBe(false);
      expect(live!.after).toBeGreaterThan(live!.before);

      // The end reaches the page: every epoch, both ranks, the rounds.
      // (the rank exits come last, after the coordinator finished)
      await page.waitForFunction(
        `document.querySelectorAll('#events li[data-kind="exit"]').length === 2`,
        undefined,
        {
          timeout: 30_000,
        },
      );
      expect(await page.evaluate('document.body.dataset.finished')).toBe('true');
      const rows = page.locator('#ranks-body tr[data-rank]');
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(0).getAttribute('data-status')).toBe('finished');
      expect(await page.locator('#run-status').textContent()).toMatch(
        /CpuCadence · 2 ranks · epochs 4\/4 · finished: Completed/,
      );
      for (const id of ['chart-eval', 'chart-throughput', 'chart-share', 'chart-elche', 'chart-timeline'])
        expect(await page.evaluate(pointsOf(id)), id).toBeGreaterThan(0);
      await page.screenshot({ path: join(OUTPUT, 'live.png'), fullPage: true });

      // /state.json says the same; the log holds every epoch and both ranks' steps.
      const state = (await (await fetch(new URL('state.json', dashboard.url))).json()) as {
        epochs: unknown[];
        ranks: { status: string }[];
      };
      expect(state.epochs).toHaveLength(4);
      expect(state.ranks.map((rank) => rank.status)).toEqual(['finished', 'finished']);
      expect((await fetch(dashboard.url, { method: 'POST' })).status).toBe(405);
      recorder!.close();
      const { records, truncated } = readMetricsLog(logPath);
      expect(truncated).toBe(false);
      expect(records.filter((record) => record.kind === 'epoch')).toHaveLength(4);
      expect(new Set(records.flatMap((record) => (record.kind === 'step' ? [record.rank] : [])))).toEqual(
        new Set([0, 1]),
      );
      expect(records.some((record) => record.kind === 'elche')).toBe(true);
      // An eval after every epoch (the elected rank's MSE over the data), the final one included.
      const evals = records.flatMap((record) => (record.kind === 'eval' ? [record] : []));
      expect(evals.length).toBeGreaterThanOrEqual(4);
      for (const result of evals) expect(result.error).toBeUndefined();
      expect(records.filter((record) => record.kind === 'exit')).toHaveLength(2);

      // The saved report, from the log, opened from disk: the same charts, both ranks.
      const reportPath = join(scratch, 'report.html');
      await saveReport(reportPath, { from: logPath });
      const report = await browser!.newPage();
      await report.goto(pathToFileURL(reportPath).href);
      await report.waitForFunction(`${pointsOf('chart-loss')} > 0`, undefined, { timeout: 10_000 });
      expect(await report.evaluate(pointsOf('chart-loss'))).toBe(await page.evaluate(pointsOf('chart-loss')));
      expect(await report.locator('#ranks-body tr[data-rank]').count()).toBe(2);
      expect(await report.evaluate('document.body.dataset.mode')).toBe('report');
      expect(await report.locator('#events li[data-kind="exit"]').count()).toBe(2);
      await report.screenshot({ path: join(OUTPUT, 'report.png'), fullPage: true });
      await report.close();
    } finally {
      await page.close();
      await dashboard.close();
    }
  });

  it('bound off loopback, refuses a request without the token (401), serves it with the token', async () => {
    const { RunRecorder } = await import('@flodl/distributed');
    const recorder = new RunRecorder({ run: { name: 'token test' } });
    const lines: string[] = [];
    const dashboard = await startDashboard({
      recorder,
      host: '0.0.0.0',
      announce: (line) => lines.push(line),
    });
    try {
      expect(dashboard.token).toMatch(/^[\w-]{24}$/);
      expect(lines).toEqual([`flodl dashboard: http://0.0.0.0:${dashboard.port}/?token=${dashboard.token}`]);
      const base = `http://127.0.0.1:${dashboard.port}`;
      for (const path of ['/', '/state.json', '/events', '/?token=wrong'])
        expect((await fetch(`${base}${path}`)).status, path).toBe(401);
      const page = await browser!.newPage();
      const refused = await page.goto(`${base}/`);
      expect(refused?.status()).toBe(401);
      await page.goto(`${base}/?token=${dashboard.token}`);
      await page.waitForFunction(
        `document.getElementById('run-status')?.textContent.includes('running')`,
        undefined,
        {
          timeout: 10_000,
        },
      );
      await page.close();
      const state = await fetch(`${base}/state.json`, {
        headers: { authorization: `Bearer ${dashboard.token}` },
      });
      expect(state.status).toBe(200);
      expect(((await state.json()) as { run: { name: string } }).run.name).toBe('token test');
    } finally {
      await dashboard.close();
    }
  });
});
