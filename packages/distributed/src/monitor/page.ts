import type { PageAssets } from './page-assets.js';
import type { RunStateSnapshot } from './run-state.js';

/** How the page gets its data. */
export type PageMode =
  /** Served by a dashboard: `/state.json` first, then records over Server-Sent Events. */
  | { kind: 'live' }
  /** A saved report: the state is inside the page. */
  | { kind: 'report'; state: RunStateSnapshot };

/** Text safe inside `<script>` (no `</script>`, no `<!--`) and in HTML text. */
function scriptSafe(text: string): string {
  return text.replaceAll('<', '\\u003c').replaceAll('\u2028', '\\u2028').replaceAll('\u2029', '\\u2029');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * The dashboard page as one HTML document: its script and styles inline (uPlot included), so it
 * needs nothing from the network; a report also carries its data.
 */
export function renderPage(title: string, mode: PageMode, assets: PageAssets): string {
  const config = mode.kind === 'live' ? { mode: 'live' } : { mode: 'report', state: mode.state };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${assets.css.replaceAll('</style', '<\\/style')}</style>
</head>
<body data-mode="${mode.kind}">
<header><h1>${escapeHtml(title)}</h1><span id="run-status">connecting</span></header>
<main id="app"></main>
<script>window.__FLODL_DASHBOARD__ = ${scriptSafe(JSON.stringify(config))};</script>
<script>${assets.script.replaceAll('</script', '<\\/script')}</script>
</body>
</html>
`;
}
