// The dashboard page (browser code, bundled with uPlot into one script by esbuild): folds the run's
// records with the same RunState the launcher keeps, and draws the charts, the rank table and the
// timeline. Live pages read /state.json, then one record per Server-Sent Event; a saved report
// carries its state. Each chart's element says how many points it holds (data-points).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { RunState, type RunStateSnapshot } from '../run-state.js';
import type { MonitorRecord } from '../schema.js';

type Config = { mode: 'live' } | { mode: 'report'; state: RunStateSnapshot };

const config = (window as unknown as { __FLODL_DASHBOARD__: Config }).__FLODL_DASHBOARD__;
const PALETTE = ['#2f6fdf', '#e0612a', '#2a9d5b', '#9a4fd1', '#c9a21a', '#d13f7a', '#1aa7b5', '#6b6b6b'];

interface ChartSpec {
  id: string;
  title: string;
  /** Labels of the y series. */
  series: string[];
  /** x values first, then one array per series (null: no point there). */
  data: (number | null)[][];
  xLabel: string;
  /** Draw each point (a dot); `lines: false` draws only the dots. */
  points?: boolean;
  lines?: boolean;
  /** Names of the y levels 1, 2, … (the timeline's rows). */
  levels?: readonly string[];
}

const charts = new Map<string, { plot: uPlot; shape: string }>();

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** Merges (x, y) lists into uPlot's aligned columns. */
function aligned(lists: [number, number | null][][]): (number | null)[][] {
  const xs = [...new Set(lists.flatMap((list) => list.map(([x]) => x)))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const columns = lists.map(() => new Array<number | null>(xs.length).fill(null));
  lists.forEach((list, series) => {
    for (const [x, y] of list) columns[series]![index.get(x)!] = y;
  });
  return [xs, ...columns];
}

function draw(spec: ChartSpec): void {
  let holder = document.getElementById(spec.id);
  if (!holder) {
    const card = element('section', { class: 'card' });
    card.append(Object.assign(element('h2'), { textContent: spec.title }));
    holder = element('div', { id: spec.id, class: 'chart' });
    card.append(holder);
    document.getElementById('charts')!.append(card);
  }
  const points = spec.data.slice(1).reduce((sum, column) => sum + column.filter((y) => y !== null).length, 0);
  holder.dataset.points = String(points);
  const shape = spec.series.join('|');
  const existing = charts.get(spec.id);
  if (existing && existing.shape === shape) {
    existing.plot.setData(spec.data as uPlot.AlignedData);
    return;
  }
  existing?.plot.destroy();
  const width = Math.max(320, holder.clientWidth || 560);
  const plot = new uPlot(
    {
      width,
      height: 220,
      scales: {
        x: { time: false },
        ...(spec.levels ? { y: { range: [0.5, spec.levels.length + 0.5] as uPlot.Range.MinMax } } : {}),
      },
      axes: [
        { label: spec.xLabel },
        spec.levels
          ? {
              size: 90,
              splits: () => spec.levels!.map((_, level) => level + 1),
              values: (_, splits) => splits.map((level) => spec.levels![level - 1] ?? ''),
            }
          : {},
      ],
      series: [
        { label: spec.xLabel },
        ...spec.series.map((label, i) => ({
          label,
          stroke: PALETTE[i % PALETTE.length]!,
          spanGaps: true,
          width: spec.lines === false ? 0 : 1.5,
          points: { show: spec.points ?? false, size: 7, fill: PALETTE[i % PALETTE.length]! },
        })),
      ],
    },
    spec.data as uPlot.AlignedData,
    holder,
  );
  charts.set(spec.id, { plot, shape });
}

function seconds(state: RunStateSnapshot, t: number): number {
  return Math.round((t - (state.startedAt ?? t)) / 100) / 10;
}

function chartSpecs(state: RunStateSnapshot): ChartSpec[] {
  const ranks = state.ranks.map((rank) => rank.rank);
  const epochs = state.epochs.map((record) => record.metrics);
  const perRank = (pick: (metrics: (typeof epochs)[number], rank: number) => number | null | undefined) =>
    ranks.map((rank) =>
      epochs.map((metrics): [number, number | null] => [metrics.epoch, pick(metrics, rank) ?? null]),
    );
  const at = (t: number) => seconds(state, t);
  const kinds = ['round', 'checkpoint', 'death', 'reform', 'exit'] as const;
  return [
    {
      id: 'chart-loss',
      title: 'Loss',
      xLabel: 'seconds',
      series: [...ranks.map((rank) => `rank ${rank} step`), 'epoch mean'],
      data: aligned([
        ...ranks.map((rank) =>
          state.steps
            .filter((step) => step.rank === rank)
            .map((step): [number, number | null] => [at(step.t), step.loss]),
        ),
        state.epochs.map((record): [number, number | null] => [at(record.t), record.metrics.avgLoss]),
      ]),
    },
    {
      id: 'chart-eval',
      title: 'Eval per epoch',
      xLabel: 'epoch',
      series: ['eval', 'mean loss'],
      points: true,
      data: aligned([
        state.evals
          .filter((record) => !record.error)
          .map((record): [number, number | null] => [record.epoch, record.metric]),
        epochs.map((metrics): [number, number | null] => [metrics.epoch, metrics.avgLoss]),
      ]),
    },
    {
      id: 'chart-throughput',
      title: 'Throughput per rank (samples/s)',
      xLabel: 'epoch',
      series: ranks.map((rank) => `rank ${rank}`),
      points: true,
      data: aligned(perRank((metrics, rank) => (metrics.perRankThroughput[rank] ?? 0) * 1000)),
    },
    {
      id: 'chart-share',
      title: 'Batch share per rank',
      xLabel: 'epoch',
      series: ranks.map((rank) => `rank ${rank}`),
      points: true,
      data: aligned(perRank((metrics, rank) => metrics.perRankBatchShare[rank])),
    },
    {
      id: 'chart-elche',
      title: 'ElChe cadence: anchor and window per rank (batches)',
      xLabel: 'seconds',
      series: ['anchor', ...ranks.map((rank) => `rank ${rank} window`)],
      data: aligned([
        state.elche.map((record): [number, number | null] => [at(record.t), record.anchor]),
        ...ranks.map((rank) =>
          state.elche.map((record): [number, number | null] => [at(record.t), record.window[rank] ?? null]),
        ),
      ]),
    },
    {
      id: 'chart-timeline',
      title: 'Timeline: rounds, checkpoints, deaths, re-formations, exits',
      xLabel: 'seconds',
      series: [...kinds],
      points: true,
      lines: false,
      levels: kinds,
      data: aligned(
        kinds.map((kind, level) =>
          (kind === 'round' ? state.rounds : state.timeline.filter((record) => record.kind === kind)).map(
            (record): [number, number | null] => [at(record.t), level + 1],
          ),
        ),
      ),
    },
  ];
}

function format(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined ? '–' : Number(value.toPrecision(digits)).toString();
}

function renderRanks(state: RunStateSnapshot): void {
  const body = document.getElementById('ranks-body')!;
  body.replaceChildren(
    ...state.ranks.map((rank) => {
      const row = element('tr', { 'data-rank': String(rank.rank), 'data-status': rank.status });
      const cells = [
        `rank ${rank.rank}`,
        rank.status + (rank.cause ? ` (${rank.cause})` : ''),
        String(rank.steps),
        format(rank.lastLoss),
        format(rank.samplesPerSec, 4),
        rank.share === null ? '–' : `${(rank.share * 100).toFixed(1)}%`,
      ];
      for (const text of cells) row.append(Object.assign(element('td'), { textContent: text }));
      return row;
    }),
  );
}

function renderEvents(state: RunStateSnapshot): void {
  const list = document.getElementById('events')!;
  const recent = state.timeline.slice(-30).reverse();
  list.replaceChildren(
    ...recent.map((record) => {
      const at = `${seconds(state, record.t)} s`;
      let text: string;
      if (record.kind === 'death') text = `rank ${record.rank} died (${record.cause}): ${record.message}`;
      else if (record.kind === 'reform') text = `re-formed: ranks ${record.ranks.join(', ')}`;
      else if (record.kind === 'exit')
        text = `rank ${record.rank} exited (${record.signal ?? `code ${record.exitCode}`})`;
      else if (record.kind === 'checkpoint')
        text = `checkpoint of round ${record.version}${record.rank === undefined ? '' : ` by rank ${record.rank}`}${record.error ? ` failed: ${record.error}` : ''}`;
      else text = `finished: ${record.reason}`;
      return Object.assign(element('li', { 'data-kind': record.kind }), { textContent: `${at}  ${text}` });
    }),
  );
}

function render(state: RunStateSnapshot): void {
  const run = state.run;
  const status = state.finished
    ? `finished: ${state.finished.reason}`
    : config.mode === 'live'
      ? 'running'
      : 'saved while running';
  const statusNode = document.getElementById('run-status')!;
  statusNode.textContent = [
    run?.mode,
    run ? `${run.worldSize} rank${run.worldSize === 1 ? '' : 's'}` : undefined,
    `epochs ${state.epochs.length}${run?.epochs ? `/${run.epochs}` : ''}`,
    status,
  ]
    .filter(Boolean)
    .join(' · ');
  document.body.dataset.records = String(state.recordCount);
  document.body.dataset.finished = String(state.finished !== null);
  for (const spec of chartSpecs(state)) draw(spec);
  renderRanks(state);
  renderEvents(state);
}

function layout(): void {
  const app = document.getElementById('app')!;
  app.innerHTML = `<div id="charts" class="grid"></div>
<section class="card wide"><h2>Ranks</h2><table id="ranks"><thead><tr><th>rank</th><th>status</th><th>steps</th><th>last loss</th><th>samples/s</th><th>share</th></tr></thead><tbody id="ranks-body"></tbody></table></section>
<section class="card wide"><h2>Events</h2><ul id="events"></ul></section>`;
}

async function live(): Promise<void> {
  const token = new URLSearchParams(location.search).get('token');
  const query = token ? `?token=${encodeURIComponent(token)}` : '';
  let state = new RunState();
  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    setTimeout(() => {
      pending = false;
      render(state.snapshot);
    }, 200);
  };
  const source = new EventSource(`events${query}`);
  // The first event is the whole state; later ones one record each. A reconnect starts over.
  source.addEventListener('state', (event) => {
    state = new RunState({ from: JSON.parse((event as MessageEvent<string>).data) as RunStateSnapshot });
    schedule();
  });
  source.addEventListener('message', (event) => {
    state.apply(JSON.parse(event.data as string) as MonitorRecord);
    schedule();
  });
  source.addEventListener('error', () => {
    document.getElementById('run-status')!.textContent = state.snapshot.finished
      ? 'finished (dashboard closed)'
      : 'reconnecting';
  });
}

layout();
if (config.mode === 'report') render(config.state);
else void live();
