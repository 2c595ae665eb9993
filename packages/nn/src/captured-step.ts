// A training step captured into a CUDA graph: forward, loss, backward, clipping and the optimizer
// update recorded once and replayed with one launch per step (PyTorch's whole-network capture).
import { noGrad } from '@flodl/autograd';
import {
  type CaptureErrorMode,
  CudaEvent,
  CudaGraph,
  CudaStream,
  FlodlError,
  invalidArgument,
  keep,
  stack,
  Tensor,
  tidy,
  unknownOptionError,
  withStream,
} from '@flodl/tensor-native';
import type { Optimizer } from './optim/optimizer.js';

/** The step to capture: forward and loss of one batch (backward and the update are the step's). */
export type CapturedLossFn = (inputs: Tensor[]) => Tensor;

export interface CapturedStepOptions {
  /**
   * Eager steps (on a side stream, on the batches given) before the capture, so that lazy
   * initialisation (cuBLAS handles, the optimizer's state) is not captured. Default 3, at least 1.
   */
  warmup?: number;
  /** Clip the gradients' total 2-norm to this before each update (on the device, no host read). */
  maxGradNorm?: number;
  /** What CUDA refuses from other threads during the capture; default `'global'`. */
  captureErrorMode?: CaptureErrorMode;
  /**
   * A run whose inputs differ from the captured ones (a last partial batch): `'refuse'`
   * (default: ERR_CUDA_GRAPH) or `'eager'` (that run trains eagerly; the graph stays for the
   * next run of the captured shapes).
   */
  otherShapes?: 'refuse' | 'eager';
}

const OP = 'CapturedStep';

/**
 * One training step on static shapes, captured into a CUDA graph: `run(inputs)` trains on
 * `inputs` and returns the step's loss. The first `warmup` runs train eagerly on a side
 * stream; the next one captures forward, loss, backward, clipping and the optimizer update,
 * and every run after that copies `inputs` into the graph's own tensors and replays it: one
 * launch for the whole step, so a small model is no longer bound by kernel launches. Each run
 * is a real step on the batch it is given (the warm-up runs too), as an eager loop would take.
 *
 * Replays repeat the GPU work of the capture with the values it had, so what the step computes
 * on the host is frozen: the optimizer must do its update on the device (SGD; Adam/AdamW on
 * the fused kernel, their default on CUDA, unless `fused: false` or `foreach` was given; others
 * are refused at construction), and when a group's options change (a
 * learning-rate schedule) the step is captured again on the next run (`captures` counts
 * them: a per-epoch schedule costs one capture per epoch, a per-step one defeats the graph).
 * Every run must bring the same shapes, dtypes and device as the capture (drop the last partial
 * batch); `item()` or printing inside `lossFn` is refused with ERR_CUDA_GRAPH.
 *
 * The returned loss is the step's own tensor, overwritten by the next run: read it
 * (`item()`) or `clone()` it before then. Between runs, do not zero or replace the gradients
 * or the optimizer's state: the graph keeps writing the tensors it captured.
 *
 * PyTorch: the whole-network capture recipe (warm-up on a side stream, `torch.cuda.graph`,
 * static inputs, `g.replay()`).
 * @example
 * ```ts
 * const optimizer = new Adam(model.parameters(), { lr: 1e-3 }); // fused on CUDA by default
 * const step = new CapturedStep(optimizer, ([x, y]) => crossEntropy(model.forward(x), y));
 * for (const [x, y] of batches) console.log(step.run([x, y]).item());
 * step.dispose();
 * ```
 */
export class CapturedStep {
  readonly #optimizer: Optimizer;
  readonly #lossFn: CapturedLossFn;
  readonly #warmup: number;
  readonly #maxGradNorm: number | undefined;
  readonly #mode: CaptureErrorMode;
  readonly #eagerOtherShapes: boolean;
  #stream: CudaStream | null = null;
  #graph: CudaGraph | null = null;
  #inputs: Tensor[] = [];
  #graphLoss: Tensor | null = null;
  #eagerLoss: Tensor | null = null;
  /** The optimizer's group options at the capture (a capture bakes them in). */
  #options: unknown[][] = [];
  #warmed = 0;
  #eagerRuns = 0;
  #captures = 0;
  #replays = 0;
  #disposed = false;

  /**
   * @throws FlodlError ERR_CUDA_GRAPH for an optimizer whose update cannot be captured;
   *   ERR_INVALID_ARGUMENT for bad options
   */
  constructor(optimizer: Optimizer, lossFn: CapturedLossFn, options: CapturedStepOptions = {}) {
    if (optimizer === null || typeof optimizer !== 'object' || typeof optimizer.captureRefusal !== 'function')
      throw invalidArgument(OP, 'optimizer', 'an Optimizer', optimizer);
    if (typeof lossFn !== 'function') throw invalidArgument(OP, 'lossFn', 'a function', lossFn);
    if (options === null || typeof options !== 'object')
      throw invalidArgument(OP, 'options', 'an options object', options);
    for (const key of Object.keys(options)) {
      if (!['warmup', 'maxGradNorm', 'captureErrorMode', 'otherShapes'].includes(key))
        throw unknownOptionError(OP, key, ['warmup', 'maxGradNorm', 'captureErrorMode', 'otherShapes']);
    }
    const warmup = options.warmup ?? 3;
    if (!Number.isSafeInteger(warmup) || warmup < 1)
      throw invalidArgument(OP, 'warmup', 'an integer >= 1', warmup);
    const { maxGradNorm } = options;
    if (
      maxGradNorm !== undefined &&
      !(typeof maxGradNorm === 'number' && maxGradNorm > 0 && Number.isFinite(maxGradNorm))
    )
      throw invalidArgument(OP, 'maxGradNorm', 'a finite number > 0', maxGradNorm);
    const mode = options.captureErrorMode ?? 'global';
    if (mode !== 'global' && mode !== 'threadLocal' && mode !== 'relaxed')
      throw invalidArgument(OP, 'captureErrorMode', "'global', 'threadLocal' or 'relaxed'", mode);
    const otherShapes = options.otherShapes ?? 'refuse';
    if (otherShapes !== 'refuse' && otherShapes !== 'eager')
      throw invalidArgument(OP, 'otherShapes', "'refuse' or 'eager'", otherShapes);
    const refusal = optimizer.captureRefusal();
    if (refusal !== null) {
      throw new FlodlError('ERR_CUDA_GRAPH', 'the optimizer cannot be captured into a CUDA graph', {
        op: OP,
        expected: 'an optimizer that updates on the device (SGD; Adam or AdamW on the fused kernel)',
        got: refusal,
      });
    }
    this.#optimizer = optimizer;
    this.#lossFn = lossFn;
    this.#warmup = warmup;
    this.#maxGradNorm = maxGradNorm;
    this.#mode = mode;
    this.#eagerOtherShapes = otherShapes === 'eager';
  }

  /** How many times the step was captured (1, plus one per change of the optimizer's options). */
  get captures(): number {
    return this.#captures;
  }

  /** How many runs replayed a captured graph. */
  get replays(): number {
    return this.#replays;
  }

  /** How many runs trained eagerly (the warm-up, and inputs of other shapes with `otherShapes: 'eager'`). */
  get eagerRuns(): number {
    return this.#eagerRuns;
  }

  /**
   * One training step on `inputs` (CUDA tensors, the same shapes every run); returns its loss
   * (owned by the step, valid until the next run).
   * @throws FlodlError ERR_CUDA_GRAPH for inputs unlike the captured ones or a step that
   *   cannot be captured; ERR_DEVICE for inputs off CUDA; ERR_DISPOSED after `dispose()`
   */
  run(inputs: readonly Tensor[]): Tensor {
    if (this.#disposed)
      throw new FlodlError('ERR_DISPOSED', 'the captured step was disposed', { op: `${OP}.run` });
    const device = checkInputs(inputs, this.#eagerOtherShapes ? [] : this.#inputs);
    const warming = this.#warmed < this.#warmup;
    if (warming || (this.#eagerOtherShapes && !sameInputs(inputs, this.#inputs))) {
      if (warming) this.#warmed += 1;
      this.#eagerRuns += 1;
      this.#eagerStep(inputs, device);
      return this.#eagerLoss!;
    }
    if (this.#graph === null || !sameOptions(this.#optimizer, this.#options)) {
      this.#capture(inputs, device);
    } else {
      noGrad(() => {
        this.#inputs.forEach((input, k) => {
          input.copy_(inputs[k]!);
        });
      });
      this.#graph.replay();
      this.#optimizer.noteReplayedStep();
    }
    this.#replays += 1;
    return this.#graphLoss!;
  }

  /** Frees the graph, its input copies and its loss. The optimizer and the model stay. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#release();
    this.#eagerLoss?.dispose();
    this.#eagerLoss = null;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #sideStream(device: number): CudaStream {
    this.#stream ??= new CudaStream(device);
    return this.#stream;
  }

  /** One eager step on the side stream, ordered after the work already queued and before what follows. */
  #eagerStep(inputs: readonly Tensor[], device: number): void {
    const side = this.#sideStream(device);
    const outer = CudaStream.current(device);
    using ready = new CudaEvent();
    ready.record(outer);
    side.waitEvent(ready);
    this.#eagerLoss?.dispose();
    this.#eagerLoss = withStream(side, () => keep(this.#body([...inputs])));
    using done = new CudaEvent();
    done.record(side);
    outer.waitEvent(done);
  }

  /** Forward, loss, backward, clipping and the update; returns the detached loss. */
  #body(inputs: Tensor[]): Tensor {
    return tidy(() => {
      this.#optimizer.zeroGrad();
      const loss = this.#lossFn(inputs);
      if (!(loss instanceof Tensor) || loss.numel !== 1) {
        throw new FlodlError('ERR_INVALID_ARGUMENT', 'lossFn must return a scalar loss tensor', {
          op: OP,
          expected: 'a Tensor with one element',
          got: loss instanceof Tensor ? `shape [${loss.shape.join(', ')}]` : typeof loss,
        });
      }
      loss.backward();
      if (this.#maxGradNorm !== undefined) {
        const parameters = this.#optimizer.paramGroups.flatMap((group) => group.params);
        clipGradNormOnDevice_(parameters, this.#maxGradNorm)?.dispose();
      }
      this.#optimizer.step();
      return loss.detach();
    });
  }

  /** Captures the step on copies of `inputs`, then replays it once: this run's step. */
  #capture(inputs: readonly Tensor[], device: number): void {
    this.#release();
    this.#inputs = noGrad(() => inputs.map((input) => keep(input.clone())));
    this.#optimizer.prepareCapture();
    // Gradients set to none: backward inside the capture allocates them from the graph's pool,
    // and every replay writes them again there.
    this.#optimizer.zeroGrad();
    const graph = new CudaGraph({ device });
    try {
      const loss = graph.capture(() => keep(this.#body([...this.#inputs])), {
        stream: this.#sideStream(device),
        captureErrorMode: this.#mode,
      });
      this.#graph = graph;
      this.#graphLoss = loss;
    } catch (error) {
      graph.dispose();
      throw error;
    }
    this.#options = groupOptions(this.#optimizer);
    this.#captures += 1;
    // The capture recorded the step without running it; the replay runs it. The host-side
    // counters already moved while the step's code ran for the capture.
    this.#graph.replay();
  }

  #release(): void {
    this.#graph?.dispose();
    this.#graph = null;
    this.#graphLoss?.dispose();
    this.#graphLoss = null;
    for (const input of this.#inputs) input.dispose();
    this.#inputs = [];
  }
}

/** Checks that `inputs` are CUDA tensors on one device, shaped like the captured ones; → the device. */
function checkInputs(inputs: readonly Tensor[], captured: readonly Tensor[]): number {
  const op = `${OP}.run`;
  if (!Array.isArray(inputs) || inputs.length === 0)
    throw invalidArgument(op, 'inputs', 'a non-empty array of Tensors', inputs);
  let device: string | undefined;
  inputs.forEach((input, k) => {
    if (!(input instanceof Tensor)) throw invalidArgument(op, `inputs[${k}]`, 'a Tensor', input);
    if (!input.device.startsWith('cuda') || (device !== undefined && input.device !== device)) {
      throw new FlodlError('ERR_DEVICE', 'a captured step trains on CUDA tensors of one device', {
        op,
        expected: device ?? 'a CUDA tensor',
        got: `inputs[${k}] on ${input.device}`,
      });
    }
    device = input.device;
  });
  if (captured.length > 0) {
    if (!sameInputs(inputs, captured)) {
      const describe = (list: readonly Tensor[]) =>
        list.map((t) => `${t.dtype}[${t.shape.join(', ')}] on ${t.device}`).join(', ');
      throw new FlodlError(
        'ERR_CUDA_GRAPH',
        'a captured step needs the inputs it was captured with, every run',
        {
          op,
          expected: describe(captured),
          got: `${describe(inputs)} (static shapes only: drop the last partial batch)`,
        },
      );
    }
  }
  return Number(device!.slice('cuda:'.length) || 0);
}

/** True when `inputs` match `captured` in count, dtype, device and shape (vacuously before a capture). */
function sameInputs(inputs: readonly Tensor[], captured: readonly Tensor[]): boolean {
  if (captured.length === 0) return true;
  if (inputs.length !== captured.length) return false;
  return inputs.every((a, k) => {
    const b = captured[k]!;
    return (
      a.dtype === b.dtype &&
      a.device === b.device &&
      a.shape.length === b.shape.length &&
      a.shape.every((n, d) => n === b.shape[d])
    );
  });
}

/** Each group's option values (everything but the parameters), in key order. */
function groupOptions(optimizer: Optimizer): unknown[][] {
  return optimizer.paramGroups.map(({ params: _params, ...options }) =>
    Object.values(options).map((value) => (Array.isArray(value) ? [...value] : value)),
  );
}

/** Whether the optimizer's group options are still `captured` (no allocation on the replay path). */
function sameOptions(optimizer: Optimizer, captured: readonly unknown[][]): boolean {
  const groups = optimizer.paramGroups;
  if (groups.length !== captured.length) return false;
  return groups.every((group, g) => {
    const values = captured[g]!;
    let k = 0;
    for (const key in group) {
      if (key === 'params') continue;
      const value = (group as unknown as Record<string, unknown>)[key];
      const then = values[k++];
      if (Array.isArray(value)) {
        if (!Array.isArray(then) || value.length !== then.length || value.some((v, i) => v !== then[i]))
          return false;
      } else if (value !== then) return false;
    }
    return k === values.length;
  });
}

/**
 * `clipGradNorm_` without reading the norm back: every op stays on the device, so a
 * CUDA graph can hold it. Returns the total norm as a 0-d tensor (the caller owns it).
 */
function clipGradNormOnDevice_(parameters: readonly Tensor[], maxNorm: number): Tensor | null {
  return noGrad(() =>
    tidy(() => {
      const grads = parameters.map((param) => param.grad).filter((grad): grad is Tensor => grad !== null);
      if (grads.length === 0) return null;
      const total = stack(grads.map((grad) => grad.norm(2))).norm(2);
      const coefficient = total.add(1e-6).reciprocal().mul(maxNorm).clamp(undefined, 1.0);
      for (const grad of grads) grad.mul_(coefficient);
      return total;
    }),
  );
}
