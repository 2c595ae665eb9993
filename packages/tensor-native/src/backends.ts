// Global backend switches (PyTorch: torch.backends.*). They change how libtorch picks kernels
// on CUDA (cuDNN algorithm search, TF32 tensor cores, deterministic algorithms); on a CPU-only
// build those can be read and set and change nothing measurable. `cpu` is ours: which library
// does the float32 linear maps on the CPU.
import { invalidArgument } from './errors.js';
import { backendFlag, setBackendFlag } from './internal/process-runtime.js';

type FlagName =
  | 'cudnn.enabled'
  | 'cudnn.benchmark'
  | 'cudnn.deterministic'
  | 'cudnn.allowTF32'
  | 'cuda.matmul.allowTF32'
  | 'deterministicAlgorithms'
  | 'cpu.oneDnnLinear'
  | 'cpu.oneDnnAvailable';

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

/** CPU switches (no PyTorch counterpart). */
export interface CpuBackend {
  /**
   * Float32 linear maps (`linear`, the `Linear` layer: forward, input and weight gradients) and
   * matrix products (libtorch's CPU `mm`, `addmm` and `bmm`, so `matmul`, the RNN layers and
   * attention, forward and backward) on the CPU by oneDNN's sgemm instead of libtorch's BLAS.
   * Default true where {@link
   * oneDnnAvailable} (false with `FLODL_GEMM=libtorch` in the environment). Debian's libtorch
   * does its matrix products with the reference BLAS (4-7.5 GFLOP/s on one core) while the oneDNN
   * it links for its convolutions reaches 50-240 on the same small shapes. Results agree with
   * libtorch's to float32 rounding, not bit for bit (another summation order). Setting it true
   * where oneDNN is not available throws ERR_DEVICE.
   */
  oneDnnLinear: boolean;
  /**
   * True when libtorch brought oneDNN's sgemm into the process (Debian's libtorch links libdnnl
   * dynamically; builds that link it statically, with MKL for their BLAS, keep libtorch's own
   * path). Read only.
   */
  readonly oneDnnAvailable: boolean;
}

/**
 * Global backend switches, read and written as properties.
 *
 * @example
 * ```ts
 * backends.cudnn.benchmark = true;          // fixed input shapes: let cuDNN pick per shape
 * backends.cuda.matmul.allowTF32 = false;   // full float32 matmuls
 * backends.deterministicAlgorithms = true;  // error on nondeterministic kernels
 * backends.cpu.oneDnnLinear = false;        // CPU linear maps by libtorch's own BLAS
 * ```
 * PyTorch: `torch.backends.cudnn`, `torch.backends.cuda.matmul`, `torch.use_deterministic_algorithms`.
 */
export const backends: {
  readonly cudnn: CudnnBackend;
  readonly cuda: { readonly matmul: MatmulBackend };
  readonly cpu: CpuBackend;
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
      cpu: Object.seal(
        Object.defineProperties({} as CpuBackend, {
          oneDnnLinear: flag('cpu.oneDnnLinear'),
          oneDnnAvailable: { get: (): boolean => backendFlag('cpu.oneDnnAvailable'), enumerable: true },
        }),
      ),
    },
    { deterministicAlgorithms: flag('deterministicAlgorithms') },
  ),
) as never;
