import { noGrad } from '@flodl/autograd';
import { checkOptions, FlodlError, invalidArgument, Tensor, tidy } from '@flodl/tensor-native';

/** What `GradScaler` needs from an optimizer. */
export interface ScalableOptimizer {
  paramGroups: readonly { params: readonly Tensor[] }[];
  step(): unknown;
}

/** Options of `GradScaler` (PyTorch's defaults). */
export interface GradScalerOptions {
  /** Default 65536 (2^16). */
  initScale?: number;
  /** Scale multiplier after `growthInterval` finite steps. Default 2. */
  growthFactor?: number;
  /** Scale multiplier after a step with inf/NaN gradients. Default 0.5. */
  backoffFactor?: number;
  /** Finite steps between growths. Default 2000. */
  growthInterval?: number;
  /** When false every method passes through. Default true. */
  enabled?: boolean;
}

/** The state `stateDict()` returns. */
export interface GradScalerState {
  scale: number;
  growthFactor: number;
  backoffFactor: number;
  growthInterval: number;
  growthTracker: number;
}

const OPTION_KEYS = ['initScale', 'growthFactor', 'backoffFactor', 'growthInterval', 'enabled'];

/**
 * Loss scaling for float16 training: the loss is multiplied by a large factor before
 * backward so small gradients do not underflow; gradients are unscaled before the step; a
 * step whose gradients hold inf or NaN is skipped and the scale backs off; after
 * `growthInterval` clean steps the scale grows.
 *
 * @example
 * ```ts
 * const scaler = new GradScaler();
 * scaler.scale(loss).backward();
 * scaler.step(optimizer); // skipped when the gradients overflowed
 * scaler.update();
 * ```
 * PyTorch: `torch.cuda.amp.GradScaler`.
 */
export class GradScaler {
  private scaleValue: number;
  private readonly growthFactor: number;
  private readonly backoffFactor: number;
  private readonly growthInterval: number;
  private growthTracker = 0;
  private readonly enabled: boolean;
  /** Per optimizer: whether this step's gradients are unscaled and whether they overflowed. */
  private readonly stepState = new Map<ScalableOptimizer, { unscaled: boolean; foundInf: boolean }>();

  constructor(options: GradScalerOptions = {}) {
    checkOptions('GradScaler', options, OPTION_KEYS);
    const {
      initScale = 65536,
      growthFactor = 2,
      backoffFactor = 0.5,
      growthInterval = 2000,
      enabled = true,
    } = options;
    if (!(initScale > 0)) throw invalidArgument('GradScaler', 'initScale', 'a positive number', initScale);
    if (!(growthFactor > 1))
      throw invalidArgument('GradScaler', 'growthFactor', 'a number > 1', growthFactor);
    if (!(backoffFactor > 0 && backoffFactor < 1))
      throw invalidArgument('GradScaler', 'backoffFactor', 'a number in (0, 1)', backoffFactor);
    if (!Number.isSafeInteger(growthInterval) || growthInterval < 1) {
      throw invalidArgument('GradScaler', 'growthInterval', 'a positive integer', growthInterval);
    }
    this.scaleValue = initScale;
    this.growthFactor = growthFactor;
    this.backoffFactor = backoffFactor;
    this.growthInterval = growthInterval;
    this.enabled = enabled;
  }

  /** True unless constructed with `enabled: false`. */
  isEnabled(): boolean {
    return this.enabled;
  }

  /** The current scale factor. */
  getScale(): number {
    return this.enabled ? this.scaleValue : 1;
  }

  /** Clean steps since the last growth or backoff. */
  getGrowthTracker(): number {
    return this.growthTracker;
  }

  /** `output × scale` (a new tensor), to call backward on. */
  scale(output: Tensor): Tensor {
    if (!(output instanceof Tensor)) throw invalidArgument('GradScaler.scale', 'output', 'a Tensor', output);
    return this.enabled ? output.mul(this.scaleValue) : output.mul(1);
  }

  /**
   * Divides the optimizer's gradients by the scale in place (for clipping before the step)
   * and records whether any is inf or NaN. Once per optimizer per step.
   * @throws FlodlError ERR_INVALID_ARGUMENT when called twice before update()
   */
  unscale_(optimizer: ScalableOptimizer): void {
    if (!this.enabled) return;
    const state = this.stateDictFor(optimizer);
    if (state.unscaled) {
      throw new FlodlError(
        'ERR_INVALID_ARGUMENT',
        'unscale_() was already called for this optimizer since the last update()',
        { op: 'GradScaler.unscale_' },
      );
    }
    const inverse = 1 / this.scaleValue;
    state.foundInf = noGrad(() =>
      tidy(() => {
        let nonFinite: Tensor | null = null;
        for (const group of optimizer.paramGroups) {
          for (const parameter of group.params) {
            const gradient = parameter.grad;
            if (gradient === null) continue;
            const count = gradient.isfinite().logicalNot().sum();
            nonFinite = nonFinite === null ? count : nonFinite.add(count);
            gradient.mul_(inverse);
          }
        }
        return nonFinite !== null && (nonFinite.item() as number) > 0;
      }),
    );
    state.unscaled = true;
  }

  /**
   * Unscales (unless `unscale_` already did) and runs `optimizer.step()` only when every
   * gradient is finite. Returns whether the step ran.
   */
  step(optimizer: ScalableOptimizer): boolean {
    if (!this.enabled) {
      optimizer.step();
      return true;
    }
    const state = this.stateDictFor(optimizer);
    if (!state.unscaled) this.unscale_(optimizer);
    if (state.foundInf) return false;
    optimizer.step();
    return true;
  }

  /**
   * Adjusts the scale after a step: ×backoffFactor if any optimizer saw inf/NaN gradients
   * (and the growth count restarts), ×growthFactor after growthInterval clean steps. Or sets
   * `newScale` directly.
   */
  update(newScale?: number): void {
    if (!this.enabled) return;
    if (newScale !== undefined) {
      if (!(newScale > 0))
        throw invalidArgument('GradScaler.update', 'newScale', 'a positive number', newScale);
      this.scaleValue = newScale;
    } else {
      const foundInf = [...this.stepState.values()].some((state) => state.foundInf);
      if (foundInf) {
        this.scaleValue *= this.backoffFactor;
        this.growthTracker = 0;
      } else if (++this.growthTracker === this.growthInterval) {
        this.scaleValue *= this.growthFactor;
        this.growthTracker = 0;
      }
    }
    this.stepState.clear();
  }

  /** The scaler's state, for checkpoints. */
  stateDict(): GradScalerState {
    return {
      scale: this.scaleValue,
      growthFactor: this.growthFactor,
      backoffFactor: this.backoffFactor,
      growthInterval: this.growthInterval,
      growthTracker: this.growthTracker,
    };
  }

  /** Restores `stateDict()` output (scale and growth count). */
  loadStateDict(state: GradScalerState): void {
    if (
      state === null ||
      typeof state !== 'object' ||
      !(state.scale > 0) ||
      !Number.isSafeInteger(state.growthTracker)
    ) {
      throw new FlodlError('ERR_CHECKPOINT', 'not a GradScaler state', {
        op: 'GradScaler.loadStateDict',
        got: JSON.stringify(state),
      });
    }
    this.scaleValue = state.scale;
    this.growthTracker = state.growthTracker;
  }

  private stateDictFor(optimizer: ScalableOptimizer): { unscaled: boolean; foundInf: boolean } {
    let state = this.stepState.get(optimizer);
    if (state === undefined) {
      state = { unscaled: false, foundInf: false };
      this.stepState.set(optimizer, state);
    }
    return state;
  }
}
