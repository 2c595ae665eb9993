#!/usr/bin/env node
// The `flodl` command of @flodl/distributed, carried here so that `npx flodl launch` works
// after installing @flodl/cooperative alone (pnpm links only direct dependencies' commands).
import { runCli } from '@flodl/distributed';

process.exitCode = await runCli(process.argv.slice(2));
