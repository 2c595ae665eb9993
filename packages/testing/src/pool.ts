// A vitest pool for suites that load libtorch: vitest's forks pool, with each worker's stderr
// passed through a LibtorchLogFilter, so the libtorch warnings a suite is known to cause are held
// back while every other one (and all other stderr output) still shows. Imported by vitest
// configs only (`@flodl/testing/pool`), never by tests.
import { ForksPoolWorker, type PoolOptions, type PoolRunnerInitializer } from 'vitest/node';
import { LibtorchLogFilter } from './libtorch-log.js';

const PINNED_VITEST = '4.1.12';

function isWritable(value: unknown): boolean {
  return typeof (value as { write?: unknown } | undefined)?.write === 'function';
}

/** The name vitest reports for {@link libtorchForks}'s workers. */
export const LIBTORCH_FORKS = 'libtorch-forks';

class LibtorchForksWorker extends ForksPoolWorker {
  override readonly name = LIBTORCH_FORKS;

  constructor(options: PoolOptions, expected: readonly RegExp[]) {
    super(options);
    // ForksPoolWorker pipes the child's stderr into its (private) `stderr` stream on start and
    // unpipes it on stop; the filter takes that stream's place and writes on to it.
    const fields = this as unknown as { stderr?: unknown };
    const target = fields.stderr;
    if (!isWritable(target)) {
      throw new Error(
        `@flodl/testing's libtorchForks pool needs vitest ${PINNED_VITEST}'s ForksPoolWorker (a stderr stream field); update src/pool.ts for this vitest`,
      );
    }
    const filter = new LibtorchLogFilter(expected);
    filter.pipe(target as NodeJS.WritableStream, { end: false });
    fields.stderr = filter;
  }
}

/**
 * vitest's forks pool (one child process per test file) that holds back libtorch log lines
 * matching `expected`. Each expected warning belongs in the package's
 * `test/native-warnings.test.ts` too, which asserts it in a fresh process.
 *
 * @example defineConfig({ test: { pool: libtorchForks([/scatter_reduce\(\) is in beta/]) } })
 */
export function libtorchForks(expected: readonly RegExp[]): PoolRunnerInitializer {
  return {
    name: LIBTORCH_FORKS,
    createPoolWorker: (options) => new LibtorchForksWorker(options, expected),
  };
}
