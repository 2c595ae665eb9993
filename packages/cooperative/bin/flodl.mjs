#!/usr/bin/env node
// The `flodl` command of @flodl/distributed, carried here so that `npx flodl launch` works
// after installing @flodl/cooperative alone (pnpm links only direct dependencies' commands),
// with the Trainer's cohort progress line drawn by the launcher (on a terminal).
import { runCli } from '@flodl/distributed';
import { launchProgress } from '@flodl/trainer';

process.exitCode = await runCli(process.argv.slice(2), { watch: launchProgress() });
