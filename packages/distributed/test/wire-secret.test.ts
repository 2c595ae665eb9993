import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createRunSecret,
  RUN_SECRET_BYTES,
  resolveRunSecret,
  SECRET_ENV,
  SECRET_FILE_ENV,
  secretEnvironment,
  secretFromHex,
  secretToHex,
  writeSecretFile,
} from '../src/wire/index.js';
import { caught, caughtSync } from './fixtures/wire-helpers.js';

const directory = mkdtempSync(join(tmpdir(), 'flodl-wire-secret-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('run secret', () => {
  it('is 32 fresh random bytes', () => {
    const one = createRunSecret();
    expect(one).toBeInstanceOf(Uint8Array);
    expect(one.length).toBe(RUN_SECRET_BYTES);
    expect(secretToHex(one)).not.toBe(secretToHex(createRunSecret()));
  });

  it('reaches a child through FLODL_SECRET', () => {
    const secret = createRunSecret();
    const environment = { ...secretEnvironment(secret) };
    expect(Object.keys(environment)).toEqual([SECRET_ENV]);
    expect(environment[SECRET_ENV]).toMatch(/^[0-9a-f]{64}$/);
    expect(resolveRunSecret(environment)).toEqual(secret);
  });

  it('reaches a child through FLODL_SECRET_FILE (written owner-only)', async () => {
    const secret = createRunSecret();
    const path = join(directory, 'run.secret');
    await writeSecretFile(path, secret);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(resolveRunSecret({ [SECRET_FILE_ENV]: path })).toEqual(secret);
    // Both set and agreeing is fine.
    expect(resolveRunSecret({ [SECRET_FILE_ENV]: path, ...secretEnvironment(secret) })).toEqual(secret);
  });

  it('says what to set when there is no secret, or two different ones', () => {
    expect(caughtSync(() => resolveRunSecret({})).message).toMatchInlineSnapshot(`
      "resolveRunSecret: no run secret in the environment
        expected: FLODL_SECRET (hex) or FLODL_SECRET_FILE (a file holding it), set by the launcher
        got: neither"
    `);
    const path = join(directory, 'other.secret');
    writeFileSync(path, secretToHex(createRunSecret()), { mode: 0o600 });
    const error = caughtSync(() =>
      resolveRunSecret({ [SECRET_FILE_ENV]: path, ...secretEnvironment(createRunSecret()) }),
    );
    expect(error.message).toMatchInlineSnapshot(`
      "resolveRunSecret: FLODL_SECRET and FLODL_SECRET_FILE disagree
        expected: one of them set, or both naming the same secret
        got: two different secrets"
    `);
  });

  it('rejects malformed text and unreadable files', async () => {
    const error = caughtSync(() => secretFromHex('abc', SECRET_ENV));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message).toMatchInlineSnapshot(`
      "secretFromHex: invalid FLODL_SECRET
        expected: 64 hex digits (createRunSecret() then secretToHex())
        got: 3 characters"
    `);
    const missing = caughtSync(() => resolveRunSecret({ [SECRET_FILE_ENV]: join(directory, 'missing') }));
    expect(missing.code).toBe('ERR_IO');
    expect(
      (await caught(() => writeSecretFile(join(directory, 'no', 'such', 'dir'), createRunSecret()))).code,
    ).toBe('ERR_IO');
    expect(caughtSync(() => secretToHex(new Uint8Array(3))).code).toBe('ERR_INVALID_ARGUMENT');
  });
});
