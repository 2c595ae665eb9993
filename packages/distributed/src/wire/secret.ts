import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { FlodlError, invalidArgument } from '@flodl/tensor-native';

/** Bytes of a run secret. */
export const RUN_SECRET_BYTES = 32;

/** Environment variable that carries the run secret to local children, as hex. */
export const SECRET_ENV = 'FLODL_SECRET';

/** Environment variable naming a file that holds the run secret as hex. */
export const SECRET_FILE_ENV = 'FLODL_SECRET_FILE';

/**
 * A fresh per-run secret: 32 random bytes. Every frame of the run is authenticated with
 * keys derived from it; share it with the run's processes only.
 *
 * @example
 * ```ts
 * const secret = createRunSecret();
 * spawn(process.execPath, ['rank.js'], { env: { ...process.env, ...secretEnvironment(secret) } });
 * ```
 */
export function createRunSecret(): Uint8Array {
  return new Uint8Array(randomBytes(RUN_SECRET_BYTES));
}

/** The secret as lowercase hex, the form `FLODL_SECRET` and secret files use. */
export function secretToHex(secret: Uint8Array): string {
  checkSecret('secretToHex', 'secret', secret);
  return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength).toString('hex');
}

/**
 * Parses a hex secret (surrounding whitespace ignored).
 *
 * @param source Where the text came from, named in the error.
 * @throws FlodlError ERR_INVALID_ARGUMENT unless the text is 64 hex digits
 * @example const secret = secretFromHex(process.env.FLODL_SECRET ?? '', 'FLODL_SECRET');
 */
export function secretFromHex(text: string, source = 'secret'): Uint8Array {
  const trimmed = typeof text === 'string' ? text.trim() : text;
  if (typeof trimmed !== 'string' || !/^[0-9a-fA-F]{64}$/.test(trimmed)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `invalid ${source}`, {
      op: 'secretFromHex',
      expected: `${RUN_SECRET_BYTES * 2} hex digits (createRunSecret() then secretToHex())`,
      got: typeof trimmed === 'string' ? `${trimmed.length} characters` : typeof trimmed,
    });
  }
  return new Uint8Array(Buffer.from(trimmed, 'hex'));
}

/**
 * The environment entries that hand `secret` to a local child process.
 *
 * @example spawn(cmd, args, { env: { ...process.env, ...secretEnvironment(secret) } });
 */
export function secretEnvironment(secret: Uint8Array): Record<typeof SECRET_ENV, string> {
  return { [SECRET_ENV]: secretToHex(secret) };
}

/**
 * Writes the secret as hex to `path`, readable by the owner only (mode 0600). Point
 * `FLODL_SECRET_FILE` at it for processes that should not see it in their environment.
 *
 * @throws FlodlError ERR_IO when the file cannot be written
 * @example await writeSecretFile('/run/user/1000/flodl.secret', secret);
 */
export async function writeSecretFile(path: string, secret: Uint8Array): Promise<void> {
  const text = `${secretToHex(secret)}\n`;
  try {
    await writeFile(path, text, { mode: 0o600, flag: 'w' });
  } catch (cause) {
    throw new FlodlError('ERR_IO', `cannot write the secret file ${path}`, { op: 'writeSecretFile', cause });
  }
}

/**
 * The run secret of this process: from `FLODL_SECRET` (hex) or from the file named by
 * `FLODL_SECRET_FILE`. When both are set they must agree.
 *
 * @param environment The variables to read; defaults to `process.env`.
 * @throws FlodlError ERR_INVALID_ARGUMENT when neither is set or the text is not a secret
 * @throws FlodlError ERR_IO when the secret file cannot be read
 * @example const secret = resolveRunSecret();
 */
export function resolveRunSecret(environment: NodeJS.ProcessEnv = process.env): Uint8Array {
  const inline = environment[SECRET_ENV];
  const file = environment[SECRET_FILE_ENV];
  const fromInline = inline ? secretFromHex(inline, SECRET_ENV) : undefined;
  const fromFile = file ? readSecretFile(file) : undefined;
  if (fromInline && fromFile && !equalBytes(fromInline, fromFile)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${SECRET_ENV} and ${SECRET_FILE_ENV} disagree`, {
      op: 'resolveRunSecret',
      expected: 'one of them set, or both naming the same secret',
      got: 'two different secrets',
    });
  }
  const secret = fromInline ?? fromFile;
  if (secret === undefined) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'no run secret in the environment', {
      op: 'resolveRunSecret',
      expected: `${SECRET_ENV} (hex) or ${SECRET_FILE_ENV} (a file holding it), set by the launcher`,
      got: 'neither',
    });
  }
  return secret;
}

function readSecretFile(path: string): Uint8Array {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
    // A secret others can read is no secret; say so without refusing (shared file systems vary).
    if ((statSync(path).mode & 0o077) !== 0) {
      process.emitWarning(`${SECRET_FILE_ENV} ${path} is readable by other users; chmod 600 it`, {
        code: 'FLODL_SECRET_FILE_MODE',
      });
    }
  } catch (cause) {
    throw new FlodlError('ERR_IO', `cannot read the secret file ${path}`, { op: 'resolveRunSecret', cause });
  }
  return secretFromHex(text, `${SECRET_FILE_ENV} ${path}`);
}

function checkSecret(op: string, name: string, secret: unknown): void {
  if (!(secret instanceof Uint8Array) || secret.length !== RUN_SECRET_BYTES) {
    throw invalidArgument(op, name, `a Uint8Array of ${RUN_SECRET_BYTES} bytes (createRunSecret())`, secret);
  }
}

function equalBytes(left: Uint8Array, right: Uint8Array): boolean {
  return left.length === right.length && left.every((value, index) => value === right[index]);
}
