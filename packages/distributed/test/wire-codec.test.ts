import { caught, type FlodlErrorLike } from '@flodl/testing';
import { encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import {
  decodeMessage,
  describeKind,
  encodeMessage,
  MessageKind,
  type MessageType,
  WireError,
  type WireMessage,
} from '../src/wire/index.js';
import { ALL_SAMPLES } from './fixtures/wire-samples.js';

function decodeError(kind: number, payload: Uint8Array): WireError {
  try {
    decodeMessage(kind, payload);
  } catch (error) {
    if (WireError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected decodeMessage to throw');
}

function encodeError(message: unknown): FlodlErrorLike {
  return caught(() => encodeMessage(message as WireMessage));
}

/** A payload of `kind` built from raw MessagePack values (bypassing validation). */
function raw(values: unknown): Uint8Array {
  return encode(values);
}

describe('message codec', () => {
  it('has a sample of every structured kind', () => {
    const sampled = new Set(ALL_SAMPLES.map((message) => message.type));
    const structured = (Object.keys(MessageKind) as MessageType[]).filter((type) => type !== 'TensorChunk');
    expect(structured.filter((type) => !sampled.has(type))).toEqual([]);
  });

  it.each(ALL_SAMPLES.map((message, index) => [`${index} ${message.type}`, message] as const))(
    'round-trips %s',
    (_, message) => {
      const { kind, payload } = encodeMessage(message);
      expect(kind).toBe(MessageKind[message.type]);
      expect(decodeMessage(kind, payload)).toEqual(message);
    },
  );

  it('keeps kinds numbered, unique and grouped by direction (append-only)', () => {
    const kinds = Object.values(MessageKind);
    expect(new Set(kinds).size).toBe(kinds.length);
    // Changing a number breaks every deployed peer: this table only ever grows.
    expect(Object.values(MessageKind).map(describeKind)).toMatchInlineSnapshot(`
      [
        "0x0101 Hello",
        "0x0102 Welcome",
        "0x0103 Reject",
        "0x0201 StartEpoch",
        "0x0202 SyncNow",
        "0x0203 RequestParams",
        "0x0204 Update",
        "0x0205 Throttle",
        "0x0206 SetGlobalStep",
        "0x0207 Checkpoint",
        "0x0208 ExecuteEvalCallback",
        "0x0209 SetEpochCallbackRole",
        "0x020a EpochAggregated",
        "0x020b EvalBroadcast",
        "0x020c Shutdown",
        "0x020d ShutdownWithSave",
        "0x020e CoordHeartbeat",
        "0x020f ExtendPartition",
        "0x0210 DeclareDead",
        "0x0211 RequestNewNcclId",
        "0x0212 NewNcclSession",
        "0x0301 Batch",
        "0x0302 SyncAck",
        "0x0303 Heartbeat",
        "0x0304 Intent",
        "0x0305 EvalResult",
        "0x0306 CheckpointResult",
        "0x0307 LrUpdate",
        "0x0308 Metrics",
        "0x0309 Exiting",
        "0x030a SnapshotReady",
        "0x030b EpochFnElapsed",
        "0x030c NewNcclIdGenerated",
        "0x0401 ContributionBegin",
        "0x0402 TensorBegin",
        "0x0403 TensorChunk",
      ]
    `);
  });

  it('pins the bytes of every sample (wire compatibility)', async () => {
    const lines = ALL_SAMPLES.map((message) => {
      const { kind, payload } = encodeMessage(message);
      return `${describeKind(kind).padEnd(30)} ${Buffer.from(payload).toString('hex')}`;
    });
    await expect(`${lines.join('\n')}\n`).toMatchFileSnapshot('fixtures/wire-golden.txt');
  });

  it('is compact: empty messages are one byte, absent trailing optionals cost nothing', () => {
    expect(encodeMessage({ type: 'SyncNow' }).payload).toEqual(Uint8Array.of(0x90));
    const bare = encodeMessage({
      type: 'Batch',
      batchMs: 1,
      dataMs: 0,
      stepCount: 1,
      batchLoss: 0.5,
    }).payload;
    expect(bare[0]).toBe(0x94); // a fixarray of 4: the two optionals are left off
    const withLast = encodeMessage({
      type: 'Batch',
      batchMs: 1,
      dataMs: 0,
      stepCount: 1,
      batchLoss: 0.5,
      syncDivergence: 1,
    });
    expect(withLast.payload[0]).toBe(0x96); // the middle optional travels as nil
    expect(decodeMessage(MessageKind.Batch, withLast.payload)).not.toHaveProperty('paramNorm');
  });

  it('accepts optional fields left off the end (what a peer of an older minor revision sends)', () => {
    expect(decodeMessage(MessageKind.Update, raw([17]))).toEqual({ type: 'Update', version: 17 });
    expect(decodeMessage(MessageKind.Update, raw([17, null]))).toEqual({ type: 'Update', version: 17 });
  });
});

describe('decode rejections name what was wrong', () => {
  it('payload that is not MessagePack', () => {
    const error = decodeError(MessageKind.Heartbeat, Uint8Array.of(0xc1));
    expect(error.reason).toBe('body');
    expect(error.code).toBe('ERR_WIRE');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad body: the Heartbeat payload is not valid MessagePack
        expected: MessagePack: a list of 1 field (stepCount)
        got: 1 bytes (Unrecognized type byte: 0xc1)"
    `);
  });

  it('trailing bytes after the message', () => {
    const payload = Uint8Array.of(...raw([5]), 0x00);
    expect(decodeError(MessageKind.Heartbeat, payload).message).toMatchInlineSnapshot(`
      "wire: bad body: the Heartbeat payload is not valid MessagePack
        expected: MessagePack: a list of 1 field (stepCount)
        got: 3 bytes (Extra 1 of 3 byte(s) found at buffer[2])"
    `);
  });

  it('an empty payload', () => {
    expect(decodeError(MessageKind.SyncNow, new Uint8Array(0)).reason).toBe('body');
  });

  it('the wrong number of fields', () => {
    const error = decodeError(MessageKind.Checkpoint, raw([1]));
    expect(error.reason).toBe('body');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad body: Checkpoint is malformed
        expected: a list of 2 fields (version, targetRank)
        got: [1]"
    `);
    expect(decodeError(MessageKind.Checkpoint, raw([1, 2, 3])).reason).toBe('body');
    expect(decodeError(MessageKind.Checkpoint, raw({ version: 1, targetRank: 2 })).reason).toBe('body');
  });

  it('a negative count, naming the nested field', () => {
    const error = decodeError(MessageKind.StartEpoch, raw([[4, 0, -3]]));
    expect(error.reason).toBe('field');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad field StartEpoch.plan.partitionSize
        expected: a non-negative safe integer
        got: -3"
    `);
  });

  it('an unsafe integer', () => {
    const error = decodeError(
      MessageKind.SetGlobalStep,
      Uint8Array.of(0x91, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
    );
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad field SetGlobalStep.globalStep
        expected: a non-negative safe integer
        got: 18446744073709552000"
    `);
  });

  it('a negative duration', () => {
    expect(decodeError(MessageKind.Batch, raw([-1, 0, 1, 0.5])).message).toMatchInlineSnapshot(`
      "wire: bad field Batch.batchMs
        expected: a finite non-negative number
        got: -1"
    `);
  });

  it('an index outside an enumeration', () => {
    expect(decodeError(MessageKind.ShutdownWithSave, raw([6])).message).toMatchInlineSnapshot(`
      "wire: bad field ShutdownWithSave.reason
        expected: the index of one of GracefulShutdown, MaxFailureExceeded, SingleSurvivor, AllRanksLost, ReduceStall, Checkpoint
        got: 6"
    `);
  });

  it('a nonce of the wrong size', () => {
    const payload = raw([1, 0, 2, 0, 'host', 1, [], new Uint8Array(15)]);
    expect(decodeError(MessageKind.Hello, payload).message).toMatchInlineSnapshot(`
      "wire: bad field Hello.nonce
        expected: 16 bytes
        got: Uint8Array(15)"
    `);
  });

  it('a bad element deep inside a list and a map', () => {
    const good = encodeMessage(ALL_SAMPLES.find((message) => message.type === 'EpochAggregated')!);
    const metrics = decodeMessage(good.kind, good.payload) as Extract<
      WireMessage,
      { type: 'EpochAggregated' }
    >;
    const fields = Object.values(metrics.metrics) as unknown[];
    fields[11] = [0.3, 'x'];
    expect(decodeError(good.kind, raw([fields])).message).toMatchInlineSnapshot(`
      "wire: bad field EpochAggregated.metrics.perRankLoss[1]
        expected: a number or null
        got: "x""
    `);
    const scalars = raw([[4, 0.3, 600, 12_000, 38_400, 11_990, 11_000, 12.5, { accuracy: [1, -2] }]]);
    expect(decodeError(MessageKind.Metrics, scalars.subarray(1)).message).toMatchInlineSnapshot(`
      "wire: bad field Metrics.scalars["accuracy"].count
        expected: a non-negative safe integer
        got: -2"
    `);
  });

  it('a map key that would poison a prototype', () => {
    const numbers = raw([4, 0.3, 600, 12_000, 38_400, 11_990, 11_000, 12.5]); // fixarray of 8, then the 8
    // The same array grown to 9, ending in the map {"__proto__": [1, 1]}.
    const poisoned = Uint8Array.of(
      0x99,
      ...numbers.subarray(1),
      0x81,
      0xa9,
      ...Buffer.from('__proto__'),
      0x92,
      1,
      1,
    );
    const error = decodeError(MessageKind.Metrics, poisoned);
    expect(error.reason).toBe('body');
    expect(error.message).toContain('__proto__ is not allowed');
  });

  it('a raw or unknown kind', () => {
    expect(decodeError(MessageKind.TensorChunk, raw([])).message).toMatchInlineSnapshot(`
      "wire: bad kind: no structured message has this kind
        expected: a message kind of this protocol version
        got: 0x0403 TensorChunk"
    `);
    expect(decodeError(0x7777, raw([])).reason).toBe('kind');
  });
});

describe('encode validation', () => {
  it('names the bad field and refuses to send', () => {
    const error = encodeError({ type: 'Batch', batchMs: Number.NaN, dataMs: 0, stepCount: 1, batchLoss: 0 });
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message).toMatchInlineSnapshot(`
      "encodeMessage: invalid Batch.batchMs
        expected: a finite non-negative number
        got: NaN"
    `);
  });

  it('rejects misspelled fields and unknown types', () => {
    expect(encodeError({ type: 'Heartbeat', stepcount: 3 }).message).toMatchInlineSnapshot(`
      "encodeMessage: invalid Heartbeat.stepcount
        expected: one of the fields of Heartbeat: stepCount
        got: "stepcount""
    `);
    expect(encodeError({ type: 'Launch' }).message).toMatchInlineSnapshot(`
      "encodeMessage: invalid message.type
        expected: a message type of the wire protocol
        got: "Launch""
    `);
    expect(encodeError({ type: 'TensorChunk' }).code).toBe('ERR_INVALID_ARGUMENT');
  });

  it('rejects values outside enumerations and missing required fields', () => {
    expect(encodeError({ type: 'Intent', intent: 'Dance' }).message).toContain(
      'one of EvalNow, CheckpointNow',
    );
    expect(encodeError({ type: 'Checkpoint', version: 1 }).message).toContain('Checkpoint.targetRank');
  });
});
