import { describeValue, invalidArgument } from '@flodl/tensor-native';
import { Decoder, Encoder } from '@msgpack/msgpack';
import { WireError } from './errors.js';
import {
  CHANNEL_NAMES,
  type EpochMetrics,
  type EpochPlan,
  INTENTS,
  MAX_SESSION_ID_BYTES,
  MessageKind,
  type MessageType,
  SAVE_REASONS,
  type ScalarTotal,
  WIRE_DTYPES,
  type WireMessage,
} from './messages.js';
import {
  bytes,
  bytesUpTo,
  count,
  type FieldCodec,
  type FieldFailure,
  integerIn,
  list,
  nonNegative,
  nullable,
  number,
  oneOf,
  optional,
  positive,
  record,
  type StructFields,
  string,
  struct,
  u16,
  u32,
} from './schema.js';

/** Which side sends a message kind (and so which side accepts it). */
export type MessageGroup = 'handshake' | 'coordinator' | 'rank' | 'data';

/** Largest world the lists of `EpochMetrics` may describe. */
const MAX_RANKS = 65_536;
/** Largest number of distinct scalar names in metrics. */
const MAX_SCALARS = 1024;

const epochPlan = struct<EpochPlan>({ epoch: count, partitionOffset: count, partitionSize: count });
const capabilities = list(string(64), 64);
const scalarTotal = struct<ScalarTotal>({ sum: number, count });
const epochMetrics = struct<EpochMetrics>({
  epoch: count,
  avgLoss: number,
  epochMs: nonNegative,
  scalars: record(number, MAX_SCALARS),
  perRank: list(record(number, MAX_SCALARS), MAX_RANKS),
  perRankThroughput: list(number, MAX_RANKS),
  perRankBatchShare: list(number, MAX_RANKS),
  perRankShareCompleteMs: list(number, MAX_RANKS),
  perRankComputeOnlyMs: list(number, MAX_RANKS),
  perRankDataStarveMs: list(number, MAX_RANKS),
  deviceIndices: list(u16, MAX_RANKS),
  perRankLoss: list(nullable(number), MAX_RANKS),
  perRankSamples: list(count, MAX_RANKS),
});
const tensorCount = integerIn(1, 1 << 20, 'an integer in [1, 1048576]');

type Variant<T extends WireMessage['type']> = Omit<Extract<WireMessage, { type: T }>, 'type'>;
type SpecTable = { [T in WireMessage['type']]: { group: MessageGroup; fields: StructFields<Variant<T>> } };

/**
 * Every structured message: its group and its fields in wire order. The key order of
 * each `fields` object is the field order on the wire; append, never reorder.
 */
const SPECS: SpecTable = {
  Hello: {
    group: 'handshake',
    fields: {
      protocolVersion: u16,
      rank: u32,
      worldSize: positive,
      channel: oneOf(CHANNEL_NAMES),
      host: string(255),
      pid: count,
      capabilities,
      nonce: bytes(16),
    },
  },
  Welcome: {
    group: 'handshake',
    fields: { protocolVersion: u16, rank: u32, worldSize: positive, nonce: bytes(16), capabilities },
  },
  Reject: { group: 'handshake', fields: { protocolVersion: u16, reason: string(1024) } },

  StartEpoch: { group: 'coordinator', fields: { plan: epochPlan } },
  SyncNow: { group: 'coordinator', fields: {} },
  RequestParams: { group: 'coordinator', fields: { version: count } },
  Update: { group: 'coordinator', fields: { version: count, nextPlan: optional(epochPlan) } },
  Throttle: { group: 'coordinator', fields: {} },
  SetGlobalStep: { group: 'coordinator', fields: { globalStep: count } },
  Checkpoint: { group: 'coordinator', fields: { version: count, targetRank: u32 } },
  ExecuteEvalCallback: { group: 'coordinator', fields: { scheduleId: count, epoch: count, targetRank: u32 } },
  SetEpochCallbackRole: { group: 'coordinator', fields: { rank: u32 } },
  EpochAggregated: { group: 'coordinator', fields: { metrics: epochMetrics } },
  EvalBroadcast: { group: 'coordinator', fields: { epoch: count, metric: number } },
  Shutdown: { group: 'coordinator', fields: {} },
  ShutdownWithSave: { group: 'coordinator', fields: { reason: oneOf(SAVE_REASONS) } },
  CoordHeartbeat: { group: 'coordinator', fields: {} },
  ExtendPartition: { group: 'coordinator', fields: { epoch: count, offset: count, size: count } },
  DeclareDead: { group: 'coordinator', fields: { rank: u32 } },
  RequestNewNcclId: { group: 'coordinator', fields: {} },
  NewNcclSession: {
    group: 'coordinator',
    fields: { uidBytes: bytesUpTo(MAX_SESSION_ID_BYTES), newRank: u32, newWorldSize: positive },
  },

  Batch: {
    group: 'rank',
    fields: {
      batchMs: nonNegative,
      dataMs: nonNegative,
      stepCount: count,
      batchLoss: number,
      paramNorm: optional(number),
      syncDivergence: optional(number),
    },
  },
  SyncAck: {
    group: 'rank',
    fields: {
      stepCount: count,
      divergence: optional(number),
      postNorm: optional(number),
      preNorm: optional(number),
    },
  },
  Heartbeat: { group: 'rank', fields: { stepCount: count } },
  Intent: { group: 'rank', fields: { intent: oneOf(INTENTS) } },
  EvalResult: {
    group: 'rank',
    fields: {
      scheduleId: count,
      epoch: count,
      metric: number,
      elapsedMs: nonNegative,
      error: optional(string(4096)),
    },
  },
  CheckpointResult: {
    group: 'rank',
    fields: { version: count, elapsedMs: nonNegative, error: optional(string(4096)) },
  },
  LrUpdate: { group: 'rank', fields: { lr: nonNegative } },
  Metrics: {
    group: 'rank',
    fields: {
      epoch: count,
      avgLoss: number,
      batchesProcessed: count,
      epochMs: nonNegative,
      samplesProcessed: count,
      shareCompleteMs: nonNegative,
      computeOnlyMs: nonNegative,
      dataStarveMs: nonNegative,
      scalars: record(scalarTotal, MAX_SCALARS),
    },
  },
  Exiting: { group: 'rank', fields: {} },
  SnapshotReady: { group: 'rank', fields: { version: count } },
  EpochFnElapsed: { group: 'rank', fields: { epoch: count, elapsedMs: nonNegative } },
  NewNcclIdGenerated: { group: 'rank', fields: { uidBytes: bytesUpTo(MAX_SESSION_ID_BYTES) } },

  ContributionBegin: { group: 'data', fields: { version: count, tensorCount } },
  TensorBegin: {
    group: 'data',
    fields: { name: string(1024), dtype: oneOf(WIRE_DTYPES), shape: list(count, 64), mass: nonNegative },
  },
};

interface CompiledSpec {
  type: MessageType;
  kind: number;
  group: MessageGroup;
  /** True for kinds whose payload is raw bytes (`TensorChunk`). */
  raw: boolean;
  body: FieldCodec<object> | undefined;
  fieldNames: ReadonlySet<string>;
}

const BY_KIND = new Map<number, CompiledSpec>();
const BY_TYPE = new Map<string, CompiledSpec>();
for (const [type, kind] of Object.entries(MessageKind) as [MessageType, number][]) {
  const spec = (SPECS as Record<string, { group: MessageGroup; fields: StructFields<object> }>)[type];
  const compiled: CompiledSpec = {
    type,
    kind,
    group: spec?.group ?? 'data',
    raw: spec === undefined,
    body: spec === undefined ? undefined : struct(spec.fields),
    fieldNames: new Set(spec === undefined ? [] : Object.keys(spec.fields)),
  };
  BY_KIND.set(kind, compiled);
  BY_TYPE.set(type, compiled);
}

// One encoder and decoder, reused: the codec is synchronous, so they are never shared mid-call.
const ENCODER = new Encoder({ ignoreUndefined: false });
const DECODER = new Decoder({
  maxStrLength: 64 * 1024,
  maxBinLength: 1024,
  maxArrayLength: MAX_RANKS * 16,
  maxMapLength: MAX_SCALARS * 4,
  maxExtLength: 0,
});

/** A message as it goes into a frame. */
export interface EncodedMessage {
  kind: number;
  payload: Uint8Array;
}

/**
 * Validates `message` and encodes it as MessagePack (an array of its fields in order).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT naming the first bad field (`Batch.batchMs`) or an unknown type
 * @example const { kind, payload } = encodeMessage({ type: 'SetGlobalStep', globalStep: 1200 });
 */
export function encodeMessage(message: WireMessage): EncodedMessage {
  const type = (message as { type?: unknown } | null)?.type;
  const spec = typeof type === 'string' ? BY_TYPE.get(type) : undefined;
  if (spec === undefined || spec.body === undefined) {
    throw invalidArgument('encodeMessage', 'message.type', 'a message type of the wire protocol', type);
  }
  for (const key of Object.keys(message)) {
    if (key !== 'type' && !spec.fieldNames.has(key)) {
      throw invalidArgument(
        'encodeMessage',
        `${spec.type}.${key}`,
        `one of the fields of ${spec.type}: ${[...spec.fieldNames].join(', ') || 'none'}`,
        key,
      );
    }
  }
  const body = spec.body.encode(message, spec.type, failEncode);
  return { kind: spec.kind, payload: ENCODER.encode(body) };
}

/**
 * Decodes and validates the payload of a frame of `kind`.
 *
 * @throws WireError (ERR_WIRE) `kind` for an unknown or raw kind, `body` for a payload that
 *   is not a well-formed message, `field` naming the first out-of-range field
 * @example const message = decodeMessage(frame.kind, frame.payload);
 */
export function decodeMessage(kind: number, payload: Uint8Array): WireMessage {
  const spec = BY_KIND.get(kind);
  if (spec === undefined || spec.body === undefined) {
    throw new WireError('kind', 'bad kind: no structured message has this kind', {
      expected: 'a message kind of this protocol version',
      got: describeKind(kind),
    });
  }
  let raw: unknown;
  try {
    raw = DECODER.decode(payload);
  } catch (cause) {
    throw new WireError('body', `bad body: the ${spec.type} payload is not valid MessagePack`, {
      expected: `MessagePack: ${spec.body.expected}`,
      got: `${payload.length} bytes (${cause instanceof Error ? cause.message : String(cause)})`,
      cause,
    });
  }
  const fields = spec.body.decode(raw, spec.type, failDecode);
  return { type: spec.type, ...fields } as WireMessage;
}

/** The variant name of a kind, or `undefined` for an unknown kind. */
export function kindName(kind: number): MessageType | undefined {
  return BY_KIND.get(kind)?.type;
}

/** `0x0301 Batch`, or `0x7777 (unknown)`: a kind for messages. */
export function describeKind(kind: number): string {
  const label = `0x${kind.toString(16).padStart(4, '0')}`;
  const name = kindName(kind);
  return name === undefined ? `${label} (unknown)` : `${label} ${name}`;
}

/** The kind numbers a group sends, e.g. every rank → coordinator kind for `'rank'`. */
export function kindsOf(...groups: MessageGroup[]): ReadonlySet<number> {
  const kinds = new Set<number>();
  for (const spec of BY_KIND.values()) if (groups.includes(spec.group)) kinds.add(spec.kind);
  return kinds;
}

/** Every kind number of this protocol version. */
export const ALL_KINDS: ReadonlySet<number> = new Set(BY_KIND.keys());

const failEncode: FieldFailure = (path, expected, got) => {
  throw invalidArgument('encodeMessage', path, expected, got);
};

const failDecode: FieldFailure = (path, expected, got) => {
  // The top level is the body; anything below it is a field.
  const isField = path.includes('.');
  throw new WireError(
    isField ? 'field' : 'body',
    isField ? `bad field ${path}` : `bad body: ${path} is malformed`,
    {
      expected,
      got: describeValue(got),
    },
  );
};
