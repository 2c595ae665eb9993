// The run's settings, announced by every rank in its Hello: what the coordinator needs to plan
// the run (dataset length, batch size, epochs, mode, ElChe knobs, callback cadence) and a
// signature of the model each rank built. The launcher forms the coordinator from the first
// rank's settings and refuses, at the handshake, any rank whose settings differ.
import { FlodlError } from '@flodl/tensor-native';
import type { ElCheConfigOptions } from '../coordinator/config.js';
import type { CoordinatorOptions } from '../coordinator/coordinator-config.js';
import type { MaxFailureThreshold } from '../coordinator/membership.js';
import type { EpochCallbackPolicy } from '../coordinator/roles.js';
import { LAUNCH_MODES, type LaunchMode } from '../launcher/options.js';
import type { Hello } from '../wire/messages.js';

/**
 * Prefix of the Hello capabilities that carry the settings (version 1): the base64url JSON is
 * cut into pieces `fr1.NN:<piece>` that fit the wire's 64-character capability strings.
 */
export const RUN_SETTINGS_CAPABILITY = 'fr1.';

/** Characters of encoded settings per capability string. */
const PIECE = 64 - RUN_SETTINGS_CAPABILITY.length - 3;

/** Longest encoded settings accepted (56 pieces: a handshake frame stays small). */
export const MAX_RUN_SETTINGS_BYTES = 56 * PIECE;

/** What identifies the model a rank built: its structure and its initial values. */
export interface ModelSignature {
  /** Parameters and buffers, in `parameters()` / `buffers()` order. */
  parameters: number;
  buffers: number;
  /** Digest of every parameter's and buffer's name, dtype and shape. */
  structure: string;
  /** Digest of their initial values. */
  values: string;
}

/** The settings every rank of one run must share. */
export interface RunSettings {
  mode: LaunchMode;
  /** Dataset length (picks). */
  totalSamples: number;
  /** Per-rank batch size. */
  batchSize: number;
  numEpochs: number;
  /** Shuffle seed. */
  seed: number;
  /** ElChe knobs (the mode is `mode`). */
  elche?: Omit<ElCheConfigOptions, 'mode'>;
  lrScaleRatio?: number;
  epochCallbackPolicy?: EpochCallbackPolicy;
  checkpointEvery?: number;
  evalEveryEpochs?: number;
  /** An epoch callback is registered. */
  epochCallback?: boolean;
  heartbeatTimeoutMs?: number;
  maxFailure?: MaxFailureThreshold;
  progressive?: boolean;
  /** `CoordinatorOptions.lookaheadBatches`: chunks handed out ahead when a rank's is about to end. */
  lookaheadBatches?: number;
  /** The script turned the progress display off (`.progress(false)`): the launcher draws none either. */
  progress?: false;
  model: ModelSignature;
}

/** The Hello capabilities carrying `settings`. */
export function encodeRunSettings(settings: RunSettings): string[] {
  const encoded = Buffer.from(JSON.stringify(settings)).toString('base64url');
  if (encoded.length > MAX_RUN_SETTINGS_BYTES) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the run settings are too large for the handshake', {
      op: 'encodeRunSettings',
      expected: `at most ${MAX_RUN_SETTINGS_BYTES} bytes encoded`,
      got: `${encoded.length} bytes`,
    });
  }
  const pieces: string[] = [];
  for (let start = 0; start < encoded.length; start += PIECE) {
    const index = String(pieces.length).padStart(2, '0');
    pieces.push(`${RUN_SETTINGS_CAPABILITY}${index}:${encoded.slice(start, start + PIECE)}`);
  }
  return pieces;
}

/**
 * The settings a Hello announces: `undefined` when it announces none (a hand-written rank
 * script), an error message when the capability is malformed.
 */
export function runSettingsOf(hello: Pick<Hello, 'capabilities'>): RunSettings | string | undefined {
  const pieces = hello.capabilities.filter((entry) => entry.startsWith(RUN_SETTINGS_CAPABILITY));
  if (pieces.length === 0) return undefined;
  const ordered: string[] = [];
  for (const piece of pieces) {
    const start = RUN_SETTINGS_CAPABILITY.length;
    const index = Number(piece.slice(start, start + 2));
    if (!Number.isInteger(index) || piece[start + 2] !== ':' || ordered[index] !== undefined) {
      return 'run settings pieces are malformed';
    }
    ordered[index] = piece.slice(start + 3);
  }
  if (ordered.length !== pieces.length) return 'run settings pieces are missing';
  const encoded = ordered.join('');
  if (encoded.length > MAX_RUN_SETTINGS_BYTES) return 'run settings over the size limit';
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encoded, 'base64url').toString());
  } catch {
    return 'run settings are not valid JSON';
  }
  return checkRunSettings(parsed);
}

function checkRunSettings(value: unknown): RunSettings | string {
  if (typeof value !== 'object' || value === null) return 'run settings are not an object';
  const settings = value as Record<string, unknown>;
  if (!LAUNCH_MODES.includes(settings.mode as LaunchMode)) return `unknown mode ${String(settings.mode)}`;
  for (const key of ['totalSamples', 'batchSize', 'numEpochs', 'seed'] as const) {
    if (!Number.isSafeInteger(settings[key]) || (settings[key] as number) < 0) return `bad ${key}`;
  }
  const lookahead = settings.lookaheadBatches;
  if (lookahead !== undefined && (!Number.isSafeInteger(lookahead) || (lookahead as number) < 0))
    return 'bad lookaheadBatches';
  if (settings.progress !== undefined && settings.progress !== false) return 'bad progress';
  const model = settings.model as Record<string, unknown> | undefined;
  if (
    typeof model !== 'object' ||
    model === null ||
    typeof model.structure !== 'string' ||
    typeof model.values !== 'string' ||
    !Number.isSafeInteger(model.parameters) ||
    !Number.isSafeInteger(model.buffers)
  ) {
    return 'run settings carry no model signature';
  }
  return settings as unknown as RunSettings;
}

/** Why `other` cannot join a run formed with `first`, or `undefined` when they agree. */
export function settingsMismatch(first: RunSettings, other: RunSettings): string | undefined {
  const { model: firstModel, ...firstRest } = first;
  const { model: otherModel, ...otherRest } = other;
  if (firstModel.structure !== otherModel.structure) {
    return `its model differs in structure (${otherModel.parameters} parameters and ${otherModel.buffers} buffers, against ${firstModel.parameters} and ${firstModel.buffers}, or other names, dtypes or shapes): the model factory must build the same model on every rank`;
  }
  if (firstModel.values !== otherModel.values) {
    return 'its model starts from different initial values: the model factory must build the same weights on every rank (seed it, or load the same checkpoint)';
  }
  const keys = new Set([...Object.keys(firstRest), ...Object.keys(otherRest)]);
  for (const key of [...keys].sort()) {
    const left = JSON.stringify((firstRest as Record<string, unknown>)[key]);
    const right = JSON.stringify((otherRest as Record<string, unknown>)[key]);
    if (left !== right) return `its ${key} is ${right ?? 'unset'} where the run's is ${left ?? 'unset'}`;
  }
  return undefined;
}

/** The coordinator's options for a run of `worldSize` ranks with `settings`. */
export function coordinatorOptionsFor(settings: RunSettings, worldSize: number): CoordinatorOptions {
  const optional = {
    lrScaleRatio: settings.lrScaleRatio,
    epochCallbackPolicy: settings.epochCallbackPolicy,
    checkpointEvery: settings.checkpointEvery,
    evalEveryEpochs: settings.evalEveryEpochs,
    epochCallback: settings.epochCallback,
    heartbeatTimeoutMs: settings.heartbeatTimeoutMs,
    maxFailure: settings.maxFailure,
    progressive: settings.progressive,
    lookaheadBatches: settings.lookaheadBatches,
  };
  return {
    worldSize,
    totalSamples: settings.totalSamples,
    batchSize: settings.batchSize,
    numEpochs: settings.numEpochs,
    seed: settings.seed,
    elche: { ...settings.elche, mode: settings.mode },
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)),
  };
}

/**
 * The launcher's admission rule for announced settings: the first rank that announces
 * settings forms the run; a later rank whose settings differ (or are malformed) is refused at
 * the handshake with the reason, which its death record and the launcher's error carry.
 */
export class RunSettingsGate {
  #first: { rank: number; settings: RunSettings } | undefined;

  /** The settings the run was formed with, once a rank announced them. */
  get settings(): RunSettings | undefined {
    return this.#first?.settings;
  }

  /** A reason to refuse `hello`, or `undefined` to admit it (`ControlServerOptions.admit`). */
  admit(hello: Pick<Hello, 'capabilities' | 'rank'>): string | undefined {
    const settings = runSettingsOf(hello);
    if (settings === undefined) return undefined;
    if (typeof settings === 'string') return `rank ${hello.rank}: ${settings}`;
    if (this.#first === undefined) {
      this.#first = { rank: hello.rank, settings };
      return undefined;
    }
    if (this.#first.rank === hello.rank) {
      // A later connection of the same rank (its data channel opener, a reconnect).
      const why = settingsMismatch(this.#first.settings, settings);
      return why === undefined ? undefined : `rank ${hello.rank} changed its run settings: ${why}`;
    }
    const why = settingsMismatch(this.#first.settings, settings);
    return why === undefined
      ? undefined
      : `rank ${hello.rank} cannot join the run rank ${this.#first.rank} formed: ${why}`;
  }
}
