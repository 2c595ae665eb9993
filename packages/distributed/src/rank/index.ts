// rank: the rank's control client, its socket I/O and heartbeats on a worker thread.
export { RankClient, type RankClientOptions, type WaitForOptions } from './client.js';
