// The failure path: when libtorch refuses an op, say precisely why in TS terms (which
// argument, which shapes, which devices). The hot path never pays for this.
import { FlodlError, invalidArgument } from '../errors.js';
import type { Tensor } from '../tensor.js';

export type Check = 'broadcast' | 'matmul' | 'sameDevice' | 'none';

function isTensor(value: unknown): value is Tensor {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Tensor)._h === 'number' &&
    '_kept' in value
  );
}

function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** Broadcast shape of two shapes, or null when they do not broadcast. */
export function broadcastShapes(a: readonly number[], b: readonly number[]): number[] | null {
  const rank = Math.max(a.length, b.length);
  const out: number[] = new Array(rank);
  for (let k = 1; k <= rank; k++) {
    const x = a[a.length - k] ?? 1;
    const y = b[b.length - k] ?? 1;
    if (x !== y && x !== 1 && y !== 1) return null;
    out[rank - k] = x === 1 ? y : x;
  }
  return out;
}

/**
 * Turns a native failure into the most precise FlodlError we can name. `tensors` maps
 * argument names to the values given for tensor arguments.
 */
export function diagnose(
  op: string,
  tensors: Record<string, unknown>,
  error: unknown,
  check: Check = 'sameDevice',
): unknown {
  const entries = Object.entries(tensors);
  for (const [name, value] of entries) {
    if (value === undefined || typeof value === 'number' || typeof value === 'boolean') continue;
    if (!isTensor(value)) return invalidArgument(op, name, 'a Tensor', value);
    if (value._h < 0) {
      return new FlodlError('ERR_DISPOSED', `${name} was disposed`, {
        op,
        expected: 'a live tensor (keep() tensors that must outlive their tidy scope)',
        got: 'a disposed tensor',
        cause: error,
      });
    }
  }
  const live = entries.filter((entry): entry is [string, Tensor] => isTensor(entry[1]));
  const devices = new Set(live.map(([, tensor]) => tensor.device));
  if (devices.size > 1) {
    return new FlodlError('ERR_DEVICE', 'tensors are on different devices', {
      op,
      expected: 'all tensors on one device (move them with .to(device))',
      got: live.map(([name, tensor]) => `${name} on ${tensor.device}`).join(', '),
      cause: error,
    });
  }
  if (check === 'broadcast' && live.length >= 2) {
    const [[nameA, a], [nameB, b]] = live as [[string, Tensor], [string, Tensor]];
    if (broadcastShapes(a.shape, b.shape) === null) {
      return new FlodlError('ERR_SHAPE', 'shapes do not broadcast', {
        op,
        expected: 'shapes that broadcast (trailing dims equal or 1)',
        got: `${nameA} ${shapeText(a.shape)} and ${nameB} ${shapeText(b.shape)}`,
        cause: error,
      });
    }
  }
  if (check === 'matmul' && live.length >= 2) {
    const [[nameA, a], [nameB, b]] = live as [[string, Tensor], [string, Tensor]];
    const inner = a.shape[a.shape.length - 1];
    const rowsB = b.shape.length === 1 ? b.shape[0] : b.shape[b.shape.length - 2];
    if (a.shape.length === 0 || b.shape.length === 0 || inner !== rowsB) {
      return new FlodlError('ERR_SHAPE', 'inner dimensions do not match', {
        op,
        expected: `${nameA}'s last dim equal to ${nameB}'s ${b.shape.length === 1 ? 'only' : 'second-to-last'} dim`,
        got: `${nameA} ${shapeText(a.shape)} and ${nameB} ${shapeText(b.shape)}`,
        cause: error,
      });
    }
  }
  if (!FlodlError.isInstance(error)) {
    // A JS TypeError from reading an argument that is not a Tensor at all.
    const wrong = entries.find(([, value]) => !isTensor(value));
    if (wrong) return invalidArgument(op, wrong[0], 'a Tensor', wrong[1]);
    return new FlodlError('ERR_INVALID_ARGUMENT', String(error instanceof Error ? error.message : error), {
      op,
      cause: error,
    });
  }
  return error;
}
