#!/usr/bin/env node
// `pnpm test:install`: installs flodl the way a user does, from a real registry.
//   1. publint and @arethetypeswrong/cli on every package (built by `npm test` or `pnpm build`)
//   2. a verdaccio registry on 127.0.0.1 (installed into .tools/verdaccio on first use)
//   3. the release flow on a copy of the repo: `changeset version`, then `changeset publish`
//      (pnpm publish: internal `workspace:` ranges become the released versions)
//   4. in fresh empty folders, `npm install @flodl/cooperative`, `pnpm add @flodl/cooperative` and
//      `yarn add @flodl/cooperative` (yarn 1, installed into .tools/yarn on first use; each builds
//      the addon from source), then a training script in ESM and in CommonJS,
//      `npx flodl --help` and a two-rank `npx flodl launch`; in the npm project `tsc --noEmit`
//      on a TypeScript script under node16 and bundler resolution
// Every step is bounded; the registry is stopped by its PID and the temporary folders are
// removed, whether the run passes or fails. Ends with `install: N passed, N failed`.
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePnpm } from './pnpm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = join(root, 'scripts', 'install-test');
const VERDACCIO = '6.8.0';
const YARN = '1.22.22';
const MINUTE = 60_000;
const work = mkdtempSync(join(tmpdir(), 'flodl-install-'));
let registry; // the verdaccio child process
let registryLog;
let streaming; // the long command runStreaming waits for
let passed = 0;
let failed = 0;

function log(line) {
  console.log(`[install] ${line}`);
}

/** Runs a command, streaming its output; throws when it fails or runs past `timeoutMs`. */
/**
 * This process's environment without what npm injects into `npm run` scripts (`npm_config_*`
 * and the other `npm_*` variables): `npm_config_userconfig` or `npm_config_registry` from the
 * caller would override the test registry's settings in the children.
 */
function inheritedEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
}

/** With `quiet`, the output is shown only when the command fails. */
function run(
  command,
  args,
  { cwd = work, env = {}, timeoutMs = 5 * MINUTE, capture = false, quiet = false } = {},
) {
  log(`$ ${[command, ...args].join(' ')}${cwd === work ? '' : `   (in ${cwd})`}`);
  capture ||= quiet;
  const result = spawnSync(command, args, {
    cwd,
    env: { ...inheritedEnv(), ...env },
    stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024 * 1024,
  });
  const failedRun = result.error !== undefined || result.status !== 0;
  if (capture && (!quiet || failedRun)) {
    process.stdout.write(result.stdout ?? '');
    process.stderr.write(result.stderr ?? '');
  }
  if (result.error) throw new Error(`${command} failed to run or timed out: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
  return capture ? `${result.stdout}${result.stderr}` : '';
}

/**
 * Runs a long command with its output shown as it comes (an install compiling the addon) and
 * returns that output; throws when it fails or runs past `timeoutMs` (then it is killed).
 */
/**
 * Runs a long command, echoing its output as it comes (without the lines `hide` matches: the
 * whole output is printed if the command fails); resolves with the output.
 */
function runStreaming(command, args, { cwd, env = {}, timeoutMs, hide }) {
  log(`$ ${[command, ...args].join(' ')}   (in ${cwd})`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...inheritedEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    streaming = child;
    let output = '';
    const collect = (sink) => {
      let partial = '';
      return (chunk) => {
        output += chunk;
        if (!hide) return sink.write(chunk);
        const lines = (partial + chunk).split('\n');
        partial = lines.pop();
        for (const line of lines) if (!hide.test(line)) sink.write(`${line}\n`);
      };
    };
    child.stdout.setEncoding('utf8').on('data', collect(process.stdout));
    child.stderr.setEncoding('utf8').on('data', collect(process.stderr));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${command} failed to run: ${error.message}`));
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      if (timedOut) reject(new Error(`${command} ${args.join(' ')} ran past ${timeoutMs / MINUTE} min`));
      else if (status !== 0) {
        if (hide) process.stderr.write(output);
        reject(new Error(`${command} ${args.join(' ')} exited with ${status}`));
      } else resolve(output);
    });
  });
}

/** One named check: counts it, and stops the run at the first failure. */
async function step(name, body) {
  const started = Date.now();
  log(`--- ${name}`);
  try {
    const note = await body();
    passed += 1;
    log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)${note ? `: ${note}` : ''}`);
  } catch (error) {
    failed += 1;
    log(`FAIL ${name}: ${error instanceof Error ? error.message : String(error)}`);
    throw error;
  }
}

/** A GET with bounded waits, retried twice; its error names the cause. */
async function request(address, init = {}) {
  let failure;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await fetch(address, { ...init, signal: AbortSignal.timeout(15_000) });
    } catch (error) {
      failure = error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  const cause = failure?.cause instanceof Error ? ` (${failure.cause.message})` : '';
  throw new Error(`${init.method ?? 'GET'} ${address}: ${failure?.message}${cause}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function publicPackages() {
  return readdirSync(join(root, 'packages'))
    .map((name) => ({ name, dir: join(root, 'packages', name) }))
    .filter(({ dir }) => existsSync(join(dir, 'package.json')))
    .map((entry) => ({
      ...entry,
      manifest: JSON.parse(readFileSync(join(entry.dir, 'package.json'), 'utf8')),
    }))
    .filter(({ manifest }) => !manifest.private);
}

/**
 * `name@version` installed into .tools/<name> on first use (the repo's own dependencies stay
 * out of it); the path of its `bin` file.
 */
function ensureTool(name, version, bin, overrides) {
  const dir = join(root, '.tools', name);
  const installed = join(dir, 'node_modules', name, 'package.json');
  const path = join(dir, 'node_modules', name, bin);
  if (existsSync(installed) && JSON.parse(readFileSync(installed, 'utf8')).version === version) return path;
  mkdirSync(dir, { recursive: true });
  const manifest = { private: true, dependencies: { [name]: version }, ...(overrides ? { overrides } : {}) };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
  return path;
}

// verdaccio 6.8.0 runs on Node 20 with node-fetch 2.7.0 (later verdaccio releases want Node 22).
const ensureVerdaccio = () => ensureTool('verdaccio', VERDACCIO, 'bin/verdaccio', { 'node-fetch': '2.7.0' });
/** yarn 1 (classic: what `npm install -g yarn` gives). */
const ensureYarn = () => ensureTool('yarn', YARN, 'bin/yarn.js');

async function startRegistry(port) {
  const bin = ensureVerdaccio();
  const dir = join(work, 'registry');
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'config.yaml');
  // @flodl/* live only here (never proxied); nothing else is served, so the projects below take
  // every other package from their usual registry.
  writeFileSync(
    config,
    [
      `storage: ${join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(dir, 'htpasswd')}`,
      '    max_users: 10',
      'packages:',
      "  '@flodl/*':",
      '    access: $all',
      '    publish: $authenticated',
      'max_body_size: 200mb',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  // Its log (start-up notices about root and the Node version included) is shown on failure.
  registryLog = join(work, 'registry.log');
  const out = openSync(registryLog, 'a');
  registry = spawn(process.execPath, [bin, '--config', config, '--listen', `127.0.0.1:${port}`], {
    cwd: dir,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + MINUTE;
  while (Date.now() < deadline) {
    if (registry.exitCode !== null) throw new Error(`verdaccio exited with ${registry.exitCode}`);
    try {
      const response = await fetch(`${url}/-/ping`, { signal: AbortSignal.timeout(2000) });
      if (response.ok) return url;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('verdaccio did not answer within 60 s');
}

async function stopRegistry() {
  if (registry === undefined || registry.exitCode !== null || registry.signalCode !== null) return;
  const exited = new Promise((resolve) => registry.once('exit', resolve));
  process.kill(registry.pid, 'SIGTERM');
  const timer = setTimeout(() => registry.exitCode === null && process.kill(registry.pid, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
  log(`registry (pid ${registry.pid}) stopped`);
}

async function addUser(url) {
  const name = 'flodl-release';
  const response = await fetch(`${url}/-/user/org.couchdb.user:${name}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, password: 'install-test', email: 'release@flodl.invalid' }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await response.json();
  if (!response.ok || typeof body.token !== 'string') throw new Error(`adduser: ${JSON.stringify(body)}`);
  return body.token;
}

/** A copy of the workspace (manifests, changesets, built packages) to run the release flow on. */
function releaseCopy() {
  const copy = join(work, 'release');
  mkdirSync(copy);
  for (const file of ['package.json', 'pnpm-workspace.yaml', 'pnpm-lock.yaml', 'LICENSE', '.npmrc']) {
    if (existsSync(join(root, file))) cpSync(join(root, file), join(copy, file));
  }
  cpSync(join(root, '.changeset'), join(copy, '.changeset'), { recursive: true });
  const skip = new Set(['node_modules', 'build', 'test', 'bench', '.turbo', 'test-results.json']);
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group))) {
      const from = join(root, group, name);
      if (!existsSync(join(from, 'package.json'))) continue;
      if (group === 'apps') {
        mkdirSync(join(copy, group, name), { recursive: true });
        cpSync(join(from, 'package.json'), join(copy, group, name, 'package.json'));
        continue;
      }
      cpSync(from, join(copy, group, name), {
        recursive: true,
        filter: (source) => !skip.has(source.slice(from.length + 1).split('/')[0] ?? ''),
      });
    }
  }
  // changesets reads the history for its changelog entries; give it one commit.
  const git = ['-c', 'user.name=flodl release', '-c', 'user.email=release@flodl.invalid'];
  run('git', ['init', '-q', '-b', 'main'], { cwd: copy });
  run('git', [...git, 'add', '-A'], { cwd: copy });
  run('git', [...git, 'commit', '-q', '-m', 'release snapshot'], { cwd: copy });
  return copy;
}

/** An empty user project: `npm init -y` (CommonJS), @flodl/* from the test registry. */
function userProject(name, url) {
  const dir = join(work, name);
  mkdirSync(dir);
  run('npm', ['init', '-y'], { cwd: dir, capture: true });
  writeFileSync(join(dir, '.npmrc'), `@flodl:registry=${url}/\n`);
  for (const file of readdirSync(fixtures)) cpSync(join(fixtures, file), join(dir, file));
  return dir;
}

function checkBuildProgress(output) {
  for (const expected of [
    /\[tensor-native\] building the addon against libtorch from .+: \d+ C\+\+ files/,
    /\[tensor-native\] {3}compiling [\w-]+\.cc \(\d+\/\d+/,
    /\[tensor-native\] built .+ in \d+/,
  ]) {
    if (!expected.test(output)) throw new Error(`the install did not print ${expected}`);
  }
  return output.match(/\[tensor-native\] built .+ in (.+)/)?.[1];
}

function runUserScripts(dir, env) {
  run('node', ['train.mjs'], { cwd: dir, env, timeoutMs: 2 * MINUTE });
  run('node', ['train.cjs'], { cwd: dir, env, timeoutMs: 2 * MINUTE });
  const help = run('npx', ['flodl', '--help'], { cwd: dir, env, capture: true, timeoutMs: MINUTE });
  if (!help.includes('usage: flodl <command>')) throw new Error('npx flodl --help printed no usage');
  const launched = run('npx', ['flodl', 'launch', '--nproc', '2', 'train.mjs'], {
    cwd: dir,
    env,
    capture: true,
    timeoutMs: 2 * MINUTE,
  });
  for (const rank of [0, 1]) {
    if (!new RegExp(`\\[rank ${rank}\\] esm: loss`).test(launched))
      throw new Error(`rank ${rank} did not train`);
  }
}

function seconds(started) {
  return `${Math.round((Date.now() - started) / 1000)} s`;
}

async function main() {
  const pnpm = ensurePnpm();
  const tools = join(root, '.tools', 'node_modules', '.bin');
  const pathEnv = `${tools}:${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`;
  const packages = publicPackages();

  await step('packaging: publint and attw on every package', () => {
    for (const { dir, name } of packages) {
      if (!existsSync(join(dir, 'dist', 'index.js')) || !existsSync(join(dir, 'dist', 'cjs', 'index.d.ts'))) {
        throw new Error(`packages/${name} is not built: run npm test or pnpm build first`);
      }
      run(join(root, 'node_modules', '.bin', 'publint'), ['--strict', '--pack', 'npm'], {
        cwd: dir,
        quiet: true,
      });
      run(join(root, 'node_modules', '.bin', 'attw'), ['--pack', '.', '--format', 'ascii'], {
        cwd: dir,
        timeoutMs: 3 * MINUTE,
        quiet: true,
      });
    }
    return `${packages.length} packages`;
  });

  const url = await startRegistry(await freePort());
  log(`registry at ${url} (pid ${registry.pid})`);
  const token = await addUser(url);
  const userconfig = join(work, 'release.npmrc');
  // Only @flodl/* go to the test registry; pnpm and every other package come from the usual one.
  writeFileSync(
    userconfig,
    `@flodl:registry=${url}/\n//127.0.0.1:${new URL(url).port}/:_authToken=${token}\n`,
  );
  const releaseEnv = {
    PATH: pathEnv,
    NPM_CONFIG_USERCONFIG: userconfig,
    npm_config_cache: join(work, 'npm-cache'),
    CI: 'true',
  };

  await step('release: changeset version, then changeset publish', () => {
    const copy = releaseCopy();
    const changeset = join(root, 'node_modules', '@changesets', 'cli', 'bin.js');
    // pnpm publish resolves `workspace:` ranges through the installed workspace: link it (the
    // dependencies come from the store the repo's own install filled; no builds run).
    run(
      process.execPath,
      [pnpm, 'install', '--frozen-lockfile', '--prefer-offline', '--ignore-scripts', '--reporter=silent'],
      { cwd: copy, env: releaseEnv, quiet: true },
    );
    run(process.execPath, [changeset, 'version'], { cwd: copy, env: releaseEnv, quiet: true });
    run(process.execPath, [changeset, 'publish', '--no-git-tag'], {
      quiet: true,
      cwd: copy,
      env: releaseEnv,
      timeoutMs: 5 * MINUTE,
    });
    return `${packages.length} packages`;
  });

  await step('registry: every package published, internal ranges rewritten', async () => {
    const versions = [];
    for (const { manifest } of packages) {
      const response = await request(`${url}/${manifest.name.replace('/', '%2f')}`);
      if (!response.ok) throw new Error(`${manifest.name} is not in the registry (${response.status})`);
      const document = await response.json();
      const latest = document.versions[document['dist-tags'].latest];
      for (const [dependency, range] of Object.entries(latest.dependencies ?? {})) {
        if (String(range).startsWith('workspace:'))
          throw new Error(`${manifest.name} depends on ${dependency}@${range}`);
      }
      versions.push(`${manifest.name}@${latest.version}`);
    }
    return versions.join(', ');
  });

  // npx runs only what the project installed (npm_config_yes=false: it never fetches a package).
  const userEnv = {
    npm_config_yes: 'false',
    PATH: `${tools}:${process.env.PATH ?? ''}`, // the pinned pnpm, not the repo's own tools
    NPM_CONFIG_USERCONFIG: join(work, 'user.npmrc'),
    npm_config_cache: join(work, 'npm-cache'),
  };
  writeFileSync(userEnv.NPM_CONFIG_USERCONFIG, '');

  const npmProject = userProject('npm-project', url);
  await step('npm install @flodl/cooperative in an empty project', async () => {
    const started = Date.now();
    const output = await runStreaming(
      'npm',
      ['install', '--no-audit', '--no-fund', '--foreground-scripts', '@flodl/cooperative'],
      { cwd: npmProject, env: userEnv, timeoutMs: 20 * MINUTE },
    );
    const build = checkBuildProgress(output);
    return `install ${seconds(started)}, of which the addon build ${build}`;
  });
  await step('npm project: ESM and CommonJS training, npx flodl --help and launch', () =>
    runUserScripts(npmProject, userEnv),
  );
  await step('npm project: tsc --noEmit under node16 and bundler resolution', () => {
    run('npm', ['install', '--no-audit', '--no-fund', '-D', 'typescript@5.9.3', '@types/node@20'], {
      cwd: npmProject,
      env: userEnv,
      timeoutMs: 5 * MINUTE,
    });
    for (const config of ['tsconfig.node16.json', 'tsconfig.bundler.json']) {
      run('npx', ['tsc', '-p', config], { cwd: npmProject, env: userEnv, timeoutMs: 2 * MINUTE });
    }
  });

  const pnpmProject = userProject('pnpm-project', url);
  // pnpm runs no dependency's build script unless it is allowed (see the tensor-native README).
  // A store of its own and no side-effects cache: a build cached by an earlier run of the same
  // version (same tarball) would otherwise be reused and the install would compile nothing.
  const storeDir = join(work, 'pnpm-store');
  const pnpmSettings = `storeDir: ${JSON.stringify(storeDir)}\nsideEffectsCache: false\n`;
  writeFileSync(
    join(pnpmProject, 'pnpm-workspace.yaml'),
    `${pnpmSettings}allowBuilds:\n  '@flodl/tensor-native': true\n`,
  );
  const pnpmEnv = { ...userEnv };
  await step('pnpm add @flodl/cooperative in an empty project', async () => {
    const started = Date.now();
    const output = await runStreaming(
      process.execPath,
      [pnpm, 'add', '@flodl/cooperative', '--reporter=append-only', '--store-dir', storeDir],
      {
        cwd: pnpmProject,
        env: pnpmEnv,
        timeoutMs: 20 * MINUTE,
      },
    );
    const build = checkBuildProgress(output);
    return `install ${seconds(started)}, of which the addon build ${build}`;
  });
  await step('pnpm project: ESM and CommonJS training, npx flodl --help and launch', () =>
    runUserScripts(pnpmProject, pnpmEnv),
  );

  // yarn 1 runs dependency build scripts by default and reads the project's .npmrc for the
  // @flodl registry; it shows a script's output only with --verbose (whose own lines, thousands
  // of them, are not echoed).
  const yarn = ensureYarn();
  const yarnProject = userProject('yarn-project', url);
  const yarnEnv = { ...userEnv, YARN_CACHE_FOLDER: join(work, 'yarn-cache') };
  await step(`yarn ${YARN}: yarn add @flodl/cooperative in an empty project`, async () => {
    const started = Date.now();
    const output = await runStreaming(
      process.execPath,
      [yarn, 'add', '@flodl/cooperative', '--non-interactive', '--no-progress', '--verbose'],
      { cwd: yarnProject, env: yarnEnv, timeoutMs: 20 * MINUTE, hide: /^verbose / },
    );
    const build = checkBuildProgress(output);
    return `install ${seconds(started)}, of which the addon build ${build}`;
  });
  await step('yarn project: ESM and CommonJS training, npx flodl --help and launch', () =>
    runUserScripts(yarnProject, yarnEnv),
  );

  // Without the allowance pnpm skips the build; the first import must then say what to do.
  const ignoredProject = userProject('pnpm-no-build', url);
  await step('pnpm without allowBuilds: the never-built addon names npm rebuild', () => {
    writeFileSync(join(ignoredProject, 'pnpm-workspace.yaml'), pnpmSettings);
    const added = spawnSync(
      process.execPath,
      [pnpm, 'add', '@flodl/cooperative', '--reporter=append-only', '--store-dir', storeDir],
      {
        cwd: ignoredProject,
        env: { ...inheritedEnv(), ...pnpmEnv },
        encoding: 'utf8',
        timeout: 5 * MINUTE,
      },
    );
    const said = `${added.stdout}${added.stderr}`;
    if (!said.includes('@flodl/tensor-native'))
      throw new Error(`pnpm did not name the ignored build:\n${said}`);
    const loaded = spawnSync(process.execPath, ['-e', "require('@flodl/cooperative')"], {
      cwd: ignoredProject,
      encoding: 'utf8',
      timeout: MINUTE,
    });
    if (loaded.status === 0) throw new Error('the addon loaded although its build was skipped');
    for (const expected of ['ERR_BINDING_NOT_FOUND', 'never built', 'npm rebuild @flodl/tensor-native']) {
      if (!loaded.stderr.includes(expected))
        throw new Error(`the load error lacks "${expected}":\n${loaded.stderr}`);
    }
    const code = said.match(/ERR_PNPM_\w+/)?.[0];
    return `pnpm exited ${added.status}${code ? ` with ${code}` : ''}; the import failed with ERR_BINDING_NOT_FOUND`;
  });
}

let code = 0;
// A signal lands between two steps (a running command holds the event loop): exit then, and
// let the exit handler stop the registry and remove the folders.
process.on('exit', () => {
  if (streaming !== undefined && streaming.exitCode === null && streaming.signalCode === null) {
    streaming.kill('SIGKILL');
  }
  if (registry !== undefined && registry.exitCode === null && registry.signalCode === null) {
    process.kill(registry.pid, 'SIGKILL');
  }
  rmSync(work, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}
try {
  await main();
} catch (error) {
  code = 1;
  if (failed === 0) {
    failed += 1;
    log(`FAIL ${error instanceof Error ? error.message : String(error)}`);
  }
  if (registryLog !== undefined && existsSync(registryLog)) {
    log('the registry log:');
    process.stdout.write(readFileSync(registryLog, 'utf8'));
  }
} finally {
  await stopRegistry();
  rmSync(work, { recursive: true, force: true });
}
console.log(`install: ${passed} passed, ${failed} failed`);
process.exit(code);
