// The PyTorch side of `pnpm bench:train`: bench/train.py kept running as a worker that trains
// one model per request (a JSON line in, a JSON line out), so both sides can take turns model
// by model while paying Python's and torch's start-up once.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** Exit status of bench/train.py when its interpreter has no torch. */
const NO_TORCH = 3;

/**
 * What train.py reports once it has started.
 * @typedef {object} TorchInfo
 * @property {string} python the interpreter
 * @property {string} torch
 * @property {string} pythonVersion
 * @property {number} threads
 * @property {number | null} cudnn
 * @property {{ matmul: boolean, cudnn: boolean, float32MatmulPrecision: string }} tf32
 */

/** A running bench/train.py. */
export class PytorchWorker {
  /**
   * @param {import('node:child_process').ChildProcess} child
   * @param {AsyncIterator<string>} lines its stdout, line by line
   * @param {{ text: string, passThrough: boolean }} stderr everything it wrote to stderr
   * @param {TorchInfo} info
   */
  constructor(child, lines, stderr, info) {
    this.child = child;
    this.lines = lines;
    this.stderr = stderr;
    this.info = info;
  }

  /**
   * Starts train.py with the first interpreter of `pythons` that has torch.
   * @param {string[]} pythons
   * @param {{ device: string, threads: number, adam: string }} settings
   * @returns {Promise<PytorchWorker>}
   * @throws Error naming every interpreter tried when none starts
   */
  static async start(pythons, settings) {
    const script = fileURLToPath(new URL('./train.py', import.meta.url));
    const tried = [];
    for (const python of pythons) {
      const child = spawn(
        python,
        [script, '--device', settings.device, '--threads', String(settings.threads), '--adam', settings.adam],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      // Kept until it has started (to explain a failure), passed through after that (warnings).
      const stderr = { text: '', passThrough: false };
      child.stderr.setEncoding('utf8').on('data', (chunk) => {
        stderr.text += chunk;
        if (stderr.passThrough) process.stderr.write(chunk);
      });
      const spawnError = new Promise((resolve) => child.once('error', resolve));
      const exited = new Promise((resolve) => child.once('close', (code) => resolve(code)));
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const first = await Promise.race([lines.next(), spawnError.then((error) => ({ error }))]);
      if ('error' in first || first.done) {
        const code = 'error' in first ? null : await exited;
        if ('error' in first || code === NO_TORCH) {
          tried.push(`${python}: ${'error' in first ? first.error.message : stderr.text.trim()}`);
          continue;
        }
        throw new Error(`${python} ${script} exited with ${code} before starting:\n${stderr.text.trim()}`);
      }
      stderr.passThrough = true;
      return new PytorchWorker(child, lines, stderr, { python, ...JSON.parse(first.value) });
    }
    throw new Error(
      `no python with torch found; tried:\n  ${tried.join('\n  ')}\npass one with --python PATH`,
    );
  }

  /**
   * Trains one model (its spec and step counts) and returns train.py's result.
   * @param {object} request name, batch, inputShape, classes, steps, warmup, and adam (this
   *   run's update mode, else the worker's)
   * @returns {Promise<import('./train.mjs').RunResult>}
   */
  async train(request) {
    this.child.stdin.write(`${JSON.stringify(request)}\n`);
    const { value, done } = await this.lines.next();
    if (done) {
      throw new Error(`the PyTorch side stopped while training ${request.name}:\n${this.stderr.text.trim()}`);
    }
    return JSON.parse(value);
  }

  /** Closes its stdin so it exits; waits for that. */
  async close() {
    const exited = new Promise((resolve) => this.child.once('close', resolve));
    this.child.stdin.end();
    await exited;
  }
}
