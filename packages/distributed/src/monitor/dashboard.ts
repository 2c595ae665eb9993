import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkOptions, FlodlError, invalidArgument } from '@flodl/tensor-native';
import { renderPage } from './page.js';
import { pageAssets } from './page-assets.js';
import { saveReport } from './report.js';
import type { RunRecorder } from './run-recorder.js';

/** Options of {@link startDashboard}. */
export interface DashboardOptions {
  /** The run to show (from `observe(host)`, or a trainer's own recorder). */
  recorder: RunRecorder;
  /** TCP port; 0 (default) picks a free one (read it from `dashboard.port`). */
  port?: number;
  /** Address to bind. Default `127.0.0.1`; any other (not loopback) requires the token. */
  host?: string;
  /** Page title. Default `flodl run` (or the run's name). */
  title?: string;
  /** Where the start line (the URL, with its token off loopback) goes. Default `console.log`; `false`: nowhere. */
  announce?: ((line: string) => void) | false;
}

/** A running dashboard. */
export interface Dashboard {
  /** The page's address (with `?token=` when one is required). */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  /** The access token (off loopback only). */
  readonly token: string | undefined;
  /** Writes the run so far as one self-contained HTML file. */
  saveReport(path: string): Promise<void>;
  /** Ends the live streams and stops listening. */
  close(): Promise<void>;
}

const OPTIONS = ['recorder', 'port', 'host', 'title', 'announce'] as const;
/** A stream whose client stopped reading is dropped past this much unsent data (it reconnects). */
const MAX_BACKLOG_BYTES = 8 * 1024 * 1024;
const KEEPALIVE_MS = 15_000;

/** True for an address only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function tokenOf(request: IncomingMessage, url: URL): string | undefined {
  const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  return bearer ?? url.searchParams.get('token') ?? undefined;
}

function sameToken(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const left = Buffer.from(given);
  const right = Buffer.from(expected);
  return left.length === right.length && timingSafeEqual(left, right);
}

function reply(
  response: ServerResponse,
  status: number,
  type: string,
  body: string,
  extra: Record<string, string> = {},
): void {
  response.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...extra,
  });
  response.end(body);
}

/**
 * Serves a live view of a run over HTTP, from the launcher process (never a rank): charts of the
 * loss (sampled steps per rank and the epoch means), eval per epoch, throughput and batch share
 * per rank, the ElChe anchor and window sizes over time, a timeline of averaging rounds,
 * checkpoints, deaths and re-formations, and each rank's status.
 *
 * Endpoints, all `GET` (nothing changes the run; any other method gets 405):
 * - `/`: the page (its script, styles and uPlot inline: it works offline);
 * - `/state.json`: the folded state ({@link RunStateSnapshot}) for scripts;
 * - `/events`: Server-Sent Events: first an `event: state` with the whole state, then one
 *   record per message as the run goes.
 *
 * It binds 127.0.0.1 by default. On any other address a random token is made and printed with
 * the URL; a request without it (`?token=` or `Authorization: Bearer`) gets 401.
 *
 * @throws `ERR_INVALID_ARGUMENT` for bad options; `ERR_IO` when the port cannot be bound.
 * @example
 * ```ts
 * const dashboard = await startDashboard({ recorder, port: 8080 });
 * // flodl dashboard: http://127.0.0.1:8080/
 * await dashboard.close();
 * ```
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const {
    recorder,
    port = 0,
    host = '127.0.0.1',
    announce = console.log,
  } = checkOptions('startDashboard', options, OPTIONS);
  if (!recorder || typeof recorder.subscribe !== 'function')
    throw invalidArgument('startDashboard', 'recorder', 'a RunRecorder (observe(host).recorder)', recorder);
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535)
    throw invalidArgument('startDashboard', 'port', 'an integer port in [0, 65535]', port);
  if (typeof host !== 'string' || host.length === 0)
    throw invalidArgument('startDashboard', 'host', 'an address to bind', host);
  const title = options.title ?? recorder.state.snapshot.run?.name ?? 'flodl run';
  const token = isLoopback(host) ? undefined : randomBytes(18).toString('base64url');
  const assets = await pageAssets();
  const page = renderPage(title, { kind: 'live' }, assets);
  const streams = new Set<ServerResponse>();

  const unsubscribe = recorder.subscribe((record) => {
    const frame = `data: ${JSON.stringify(record)}\n\n`;
    for (const stream of streams) {
      if (stream.writableLength > MAX_BACKLOG_BYTES) stream.end();
      else stream.write(frame);
    }
  });
  const keepalive = setInterval(() => {
    for (const stream of streams) stream.write(': keepalive\n\n');
  }, KEEPALIVE_MS);
  keepalive.unref();

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://dashboard');
    if (token !== undefined && !sameToken(tokenOf(request, url), token)) {
      reply(
        response,
        401,
        'text/plain; charset=utf-8',
        'a token is required: open the URL the dashboard printed\n',
        {
          'www-authenticate': 'Bearer',
        },
      );
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      reply(response, 405, 'text/plain; charset=utf-8', 'the dashboard is read-only\n', {
        allow: 'GET, HEAD',
      });
      return;
    }
    if (url.pathname === '/') reply(response, 200, 'text/html; charset=utf-8', page);
    else if (url.pathname === '/state.json')
      reply(response, 200, 'application/json', JSON.stringify(recorder.state.snapshot));
    else if (url.pathname === '/events') {
      response.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-store',
        connection: 'keep-alive',
      });
      response.write(`event: state\ndata: ${JSON.stringify(recorder.state.snapshot)}\n\n`);
      streams.add(response);
      request.on('close', () => streams.delete(response));
    } else reply(response, 404, 'text/plain; charset=utf-8', 'not found\n');
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new FlodlError('ERR_IO', `cannot serve the dashboard on ${host}:${port}`, {
          op: 'startDashboard',
          expected: 'a free port on an address of this machine',
          got: error.message,
          cause: error,
        }),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${bound}/${token ? `?token=${token}` : ''}`;
  if (announce) announce(`flodl dashboard: ${url}`);

  let closed: Promise<void> | undefined;
  return {
    url,
    port: bound,
    host,
    token,
    saveReport: (path) => saveReport(path, { from: recorder, title }),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        unsubscribe();
        clearInterval(keepalive);
        for (const stream of streams) stream.end();
        streams.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
