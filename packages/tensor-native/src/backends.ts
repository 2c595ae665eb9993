// Global backend switches (PyTorch: torch.backends.*). They change how libtorch picks kernels
// on CUDA (cuDNN algorithm search, TF32 tensor cores, deterministic algorithms); on a CPU-only
// build they can be read and set and change nothing measurable.
import { invalidArgument } from './errors.js';
import { backendFlag, setBackendFlag } from './internal/process-runtime.js';

type FlagName =
  | 'cudnn.enabled'
  | 'cudnn.benchmark'
  | 'cudnn.deterministic'
  | 'cudnn.allowTF32'
  | 'cuda.matmul.allowTF32'
  | 'deterministicAlgorithms';

function flag(name: FlagName) {
  return {
    get: (): boolean => backendFlag(name),
    set: (value: boolean): void => {
      if (typeof value !== 'boolean') throw invalidArgument(`backends.${name}`, 'value', 'a boolean', value);
      setBackendFlag(name, value);
    },
    enumerable: true,
  };
}

function switches<T extends object>(flags: Record<keyof T, FlagName>): T {
  const object = {} as T;
  for (const [key, name] of Object.entries(flags) as [string, FlagName][]) {
    Object.defineProperty(object, key, flag(name));
  }
  return Object.seal(object);
}

/** cuDNN switches. PyTorch: `torch.backends.cudnn`. */
export interface CudnnBackend {
  /** Use cuDNN where it has a kernel (default true). PyTorch: `cudnn.enabled`. */
  enabled: boolean;
  /** Time the candidate algorithms per input shape and keep the fastest (default false). PyTorch: `cudnn.benchmark`. */
  benchmark: boolean;
  /** Only deterministic cuDNN algorithms (default false). PyTorch: `cudnn.deterministic`. */
  deterministic: boolean;
  /** Allow TF32 tensor cores in cuDNN convolutions (default true, as in PyTorch). PyTorch: `cudnn.allow_tf32`. */
  allowTF32: boolean;
}

/** cuBLAS matmul switches. PyTorch: `torch.backends.cuda.matmul`. */
export interface MatmulBackend {
  /** Allow TF32 tensor cores in float32 matmuls (default false, as in PyTorch). PyTorch: `matmul.allow_tf32`. */
  allowTF32: boolean;
}

/**
 * Global backend switches, read and written as properties.
 *
 * @example
 * ```ts
 * backends.cudnn.benchmark = true;          // fixed input shapes: let cuDNN pick per shape
 * backends.cuda.matmul.allowTF32 = false;   // full float32 matmuls
 * backends.deterministicAlgorithms = true;  // error on nondeterministic kernels
 * ```
 * PyTorch: `torch.backends.cudnn`, `torch.backends.cuda.matmul`, `torch.use_deterministic_algorithms`.
 */
export const backends: {
  readonly cudnn: CudnnBackend;
  readonly cuda: { readonly matmul: MatmulBackend };
  deterministicAlgorithms: boolean;
} = Object.seal(
  Object.defineProperties(
    {
      cudnn: switches<CudnnBackend>({
        enabled: 'cudnn.enabled',
        benchmark: 'cudnn.benchmark',
        deterministic: 'cudnn.deterministic',
        allowTF32: 'cudnn.allowTF32',
      }),
      cuda: Object.freeze({ matmul: switches<MatmulBackend>({ allowTF32: 'cuda.matmul.allowTF32' }) }),
    },
    { deterministicAlgorithms: flag('deterministicAlgorithms') },
  ),
) as never;
