// rank: the rank's link to its coordinator (one connection, one inbox, typed reports) and the
// control client under it, whose socket I/O and heartbeats run on a worker thread.
export { RankClient, type RankClientOptions, type WaitForOptions } from './client.js';
export { type PlanReport, RankLink, type RankLinkOptions } from './link.js';
