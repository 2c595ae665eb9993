// The little harness of the CUDA check scripts (packages/*/scripts/gpu-check.mjs), which run on
// machines without a test runner: named checks that print `ok` / `FAIL` and keep running, an
// assert, and one closing tally that sets the exit status.

let passes = 0;
let failures = 0;

/** Runs one named check; a throw is a failure, printed with its stack, and the script goes on. */
export function check(name, fn) {
  try {
    fn();
    passed(name);
  } catch (error) {
    failed(name, error);
  }
}

/** {@link check} for an async `fn`: awaits it before the next check starts. */
export async function checkAsync(name, fn) {
  try {
    await fn();
    passed(name);
  } catch (error) {
    failed(name, error);
  }
}

function passed(name) {
  passes++;
  console.log(`ok   ${name}`);
}

function failed(name, error) {
  failures++;
  console.log(`FAIL ${name}: ${error instanceof Error ? error.stack : error}`);
}

/** Throws `message` unless `condition` holds. */
export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

/** Prints the tally (with `extra` appended) and exits: 0 when every check passed. */
export function finish(extra = '') {
  console.log(`${passes} passed, ${failures} failed${extra}`);
  process.exit(failures === 0 ? 0 : 1);
}
