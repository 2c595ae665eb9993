import { createSecretKey, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { decodeMessage } from './codec.js';
import type { WireConnection } from './connection.js';
import { timeoutError, WireError } from './errors.js';
import { PROTOCOL_VERSION } from './frame.js';
import { type ChannelName, type Hello, MessageKind, type Welcome } from './messages.js';

/** Bytes of each handshake nonce. */
export const NONCE_BYTES = 16;

/** Default bound on completing a handshake, ms. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** Kinds a coordinator accepts before the handshake: `Hello` only. */
/**
 * Capability a short-lived setup connection announces in its `Hello` (host modes open their
 * data channel on one before the rank's control client connects): its close is orderly
 * without an `Exiting` message, and it never stands for the rank's membership.
 */
export const BOOTSTRAP_CAPABILITY = 'bootstrap';

export const HELLO_KINDS: ReadonlySet<number> = new Set([MessageKind.Hello]);

/** Kinds a rank accepts in answer to its `Hello`. */
const ANSWER_KINDS: ReadonlySet<number> = new Set([MessageKind.Welcome, MessageKind.Reject]);

/** The per-connection keys, one per direction, that sign every frame after the handshake. */
export interface SessionKeys {
  clientToServer: KeyObject;
  serverToClient: KeyObject;
}

/** 16 fresh random bytes for a `Hello` or `Welcome`. */
export function createNonce(): Uint8Array {
  return new Uint8Array(randomBytes(NONCE_BYTES));
}

/**
 * The session keys of a connection: HKDF-SHA256 of the run secret, salted with both
 * nonces, one key per direction. A recorded connection cannot be replayed into a new one
 * (the coordinator's nonce differs) and a frame cannot be reflected back to its sender.
 *
 * @example const keys = deriveSessionKeys(secret, hello.nonce, welcome.nonce);
 */
export function deriveSessionKeys(
  secret: Uint8Array,
  clientNonce: Uint8Array,
  serverNonce: Uint8Array,
): SessionKeys {
  const salt = new Uint8Array(clientNonce.length + serverNonce.length);
  salt.set(clientNonce, 0);
  salt.set(serverNonce, clientNonce.length);
  const derive = (direction: string): KeyObject =>
    createSecretKey(
      new Uint8Array(hkdfSync('sha256', secret, salt, `flodl wire v${PROTOCOL_VERSION} ${direction}`, 32)),
    );
  return { clientToServer: derive('rank to coordinator'), serverToClient: derive('coordinator to rank') };
}

/** What a rank says about itself in its `Hello`. */
export interface HelloOptions {
  rank: number;
  worldSize: number;
  channel: ChannelName;
  capabilities?: string[];
}

/** Builds a `Hello` with a fresh nonce, this host's name and this process's id. */
export function createHello(options: HelloOptions): Hello {
  return {
    type: 'Hello',
    protocolVersion: PROTOCOL_VERSION,
    rank: options.rank,
    worldSize: options.worldSize,
    channel: options.channel,
    host: hostname().slice(0, 255),
    pid: process.pid,
    capabilities: options.capabilities ?? [],
    nonce: createNonce(),
  };
}

/** What the rank side switches to once the coordinator has welcomed it. */
export interface AfterHandshake {
  acceptedKinds: ReadonlySet<number>;
  acceptedFrom: string;
  /** Installs the channel's frame handling; runs synchronously with the `Welcome` frame. */
  attach: (welcome: Welcome) => void;
}

/**
 * Runs the rank side of the handshake on a fresh connection: sends `Hello`, waits for
 * `Welcome`, switches to the session keys and to `after`, all synchronously with the
 * `Welcome` frame so a message right behind it is read with the right key.
 *
 * @throws WireError ERR_WIRE `handshake` when the coordinator refuses or welcomes someone else
 * @throws FlodlError ERR_TIMEOUT when no answer comes within `timeoutMs`
 */
export function clientHandshake(
  connection: WireConnection,
  secret: Uint8Array,
  hello: Hello,
  after: AfterHandshake,
  timeoutMs = DEFAULT_HANDSHAKE_TIMEOUT_MS,
): Promise<Welcome> {
  return new Promise<Welcome>((resolve, reject) => {
    let settled = false;
    const settle = (error: unknown, welcome?: Welcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (welcome) resolve(welcome);
      else reject(error);
    };
    const timer = setTimeout(() => {
      const error = timeoutError('the handshake', timeoutMs, 'the coordinator did not answer Hello');
      connection.fail(error);
      settle(error);
    }, timeoutMs);
    connection.onClose((error) =>
      settle(
        error ?? new WireError('handshake', 'the coordinator closed the connection during the handshake'),
      ),
    );
    connection.onFrame = (frame) => {
      const message = decodeMessage(frame.kind, frame.payload);
      if (message.type === 'Reject') {
        throw new WireError('handshake', `the coordinator refused the handshake: ${message.reason}`, {
          got: `rank ${hello.rank} of ${hello.worldSize}, ${hello.channel} channel`,
        });
      }
      if (
        message.type !== 'Welcome' ||
        message.rank !== hello.rank ||
        message.worldSize !== hello.worldSize
      ) {
        throw new WireError('handshake', 'the coordinator answered Hello with an unexpected message', {
          expected: `Welcome for rank ${hello.rank} of ${hello.worldSize}`,
          got:
            message.type === 'Welcome'
              ? `Welcome for rank ${message.rank} of ${message.worldSize}`
              : message.type,
        });
      }
      const keys = deriveSessionKeys(secret, hello.nonce, message.nonce);
      connection.rekey(keys.serverToClient, keys.clientToServer);
      connection.reader.accept(after.acceptedKinds, after.acceptedFrom);
      after.attach(message);
      settle(undefined, message);
    };
    connection.reader.accept(ANSWER_KINDS, 'from the coordinator during the handshake');
    connection.send(hello).catch((error: unknown) => settle(error));
  });
}

/**
 * Why a coordinator refuses `hello`, or `undefined` to accept it (protocol version, rank
 * range and world size; membership rules are the caller's).
 */
export function checkHello(hello: Hello, worldSize: number): string | undefined {
  if (hello.protocolVersion !== PROTOCOL_VERSION) {
    return `protocol version ${hello.protocolVersion} is not ${PROTOCOL_VERSION}: run the same @flodl/distributed everywhere`;
  }
  if (hello.worldSize !== worldSize)
    return `world size ${hello.worldSize} does not match the run's ${worldSize}`;
  if (hello.rank >= worldSize) return `rank ${hello.rank} is outside [0, ${worldSize})`;
  return undefined;
}
