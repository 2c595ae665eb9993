// libtorch's c10d collectives: a TCPStore rendezvous, then a Gloo (CPU) or NCCL (CUDA)
// process group over it. Every rank calls the same collectives in the same order; each call
// blocks its rank until all ranks arrive, and never longer than the group's timeout.

import { type Device, deviceCode, deviceName } from './device.js';
import { isFloatingPoint } from './dtype.js';
import { FlodlError, invalidArgument } from './errors.js';
import * as collectives from './internal/collectives.js';
import { cudaDeviceCount } from './internal/cuda-runtime.js';
import { type CollectivesInfo, collectivesInfo, nativeBuildInfo } from './internal/process-runtime.js';
import { checkInteger, checkNonNegativeInteger, checkOneOf, checkOptions } from './internal/validate.js';
import { Tensor } from './tensor.js';

/** `'gloo'` for CPU tensors, `'nccl'` for CUDA tensors. */
export type DistributedBackend = 'gloo' | 'nccl';

/** How `allReduce` combines the ranks' values. `'avg'` needs floating-point tensors. */
export type ReduceOp = 'sum' | 'avg' | 'min' | 'max' | 'product';

/** Options of {@link createProcessGroup}. */
export interface ProcessGroupOptions {
  /** `'gloo'` (CPU tensors; CUDA tensors too for allReduce/broadcast in CUDA builds) or `'nccl'` (CUDA). */
  backend: DistributedBackend;
  /** This process's rank, in `[0, worldSize)`. Rank 0 hosts the rendezvous store. */
  rank: number;
  /** How many ranks the group has. */
  worldSize: number;
  /** Where rank 0 listens and the others dial. Default `'127.0.0.1'`. */
  host?: string;
  /** The rendezvous port, the same on every rank. */
  port: number;
  /** Bound on the rendezvous and on every collective, in ms. Default 300000 (5 minutes). */
  timeoutMs?: number;
  /** nccl only: this rank's GPU. Default `cuda:${rank % cuda.deviceCount()}`. */
  device?: Device;
}

/** Options of {@link ProcessGroup.allReduce}. */
export interface AllReduceOptions {
  /** Default `'sum'`. */
  op?: ReduceOp;
}

const BACKENDS: readonly DistributedBackend[] = ['gloo', 'nccl'];
const REDUCE_OPS: readonly ReduceOp[] = ['sum', 'avg', 'min', 'max', 'product'];
const GROUP_OPTIONS = ['backend', 'rank', 'worldSize', 'host', 'port', 'timeoutMs', 'device'] as const;
const DEFAULT_TIMEOUT_MS = 300_000;

let info: CollectivesInfo | undefined;
let bfloat16: boolean | undefined;
function distributedInfo(): CollectivesInfo {
  info ??= collectivesInfo();
  return info;
}

// libtorch 1.13's Gloo has no bfloat16 (it fails inside the collective: "Invalid scalar type").
function glooHasBfloat16(): boolean {
  bfloat16 ??= Number.parseInt(nativeBuildInfo().torchVersion, 10) >= 2;
  return bfloat16;
}

/**
 * True when this build has the backend and, for `'nccl'`, a CUDA device is visible.
 * PyTorch: `torch.distributed.is_gloo_available()`, `is_nccl_available()`.
 */
export function isAvailable(backend: DistributedBackend): boolean {
  checkOneOf('distributed.isAvailable', 'backend', backend, BACKENDS);
  if (backend === 'gloo') return distributedInfo().gloo;
  return distributedInfo().nccl && cudaDeviceCount() > 0;
}

function checkTensorList(op: string, value: unknown): Tensor[] {
  const list = value instanceof Tensor ? [value] : value;
  if (!Array.isArray(list) || !list.every((item) => item instanceof Tensor)) {
    throw invalidArgument(op, 'tensors', 'a Tensor or an array of Tensors', value);
  }
  for (const [index, tensor] of (list as Tensor[]).entries()) {
    if (tensor._h < 0) {
      throw new FlodlError('ERR_DISPOSED', `tensor ${index} was disposed`, {
        op,
        expected: 'live tensors (keep() tensors that must outlive their tidy scope)',
        got: 'a disposed tensor',
      });
    }
  }
  return list as Tensor[];
}

/**
 * A c10d process group: this rank's membership in a fixed set of `worldSize` processes that
 * run collectives together. Create it with {@link createProcessGroup}; free it with
 * `destroy()` (or `using`). After a collective fails or times out the group is unusable:
 * every later call throws ERR_RANK_FAILED until it is destroyed.
 *
 * PyTorch: the group that `torch.distributed.init_process_group` creates.
 */
export class ProcessGroup {
  readonly backend: DistributedBackend;
  readonly rank: number;
  readonly worldSize: number;
  /** The CUDA device of an nccl group; `'cpu'` for gloo. */
  readonly device: Device;
  private id: number;

  /** @internal Groups come from createProcessGroup. */
  constructor(id: number, backend: DistributedBackend, rank: number, worldSize: number, device: Device) {
    this.id = id;
    this.backend = backend;
    this.rank = rank;
    this.worldSize = worldSize;
    this.device = device;
  }

  /** False once `destroy()` or `abort()` ran. */
  get isLive(): boolean {
    return this.id >= 0;
  }

  /**
   * Combines `tensors` across all ranks in place: afterwards every rank holds
   * `op(t_0, …, t_{worldSize-1})`, bit-identical on every rank. Tensors that share a dtype
   * travel as one flat buffer (one collective per dtype); the collectives of one call are issued
   * together and then awaited, so a call of several dtypes costs about one collective's latency.
   *
   * @param tensors the same shapes and dtypes, in the same order, on every rank
   * @param options `op`: `'sum'` (default), `'avg'`, `'min'`, `'max'`, `'product'`
   *
   * **Shape**: any; unchanged.
   * @throws FlodlError ERR_INVALID_ARGUMENT for a bad list or op, ERR_DTYPE for `'avg'` on
   *   integers, ERR_DEVICE for tensors the backend cannot take, ERR_TIMEOUT when a peer does
   *   not arrive within the timeout, ERR_RANK_FAILED when a peer died, ERR_DISPOSED after destroy()
   * @example
   * group.allReduce([weights, bias], { op: 'avg' });
   *
   * PyTorch: `torch.distributed.all_reduce(t, op=ReduceOp.SUM)` for each tensor.
   */
  allReduce(tensors: Tensor | readonly Tensor[], options?: AllReduceOptions): void {
    const op = 'ProcessGroup.allReduce';
    this.checkLive(op);
    checkOptions(op, options, ['op']);
    const reduce = checkOneOf(op, 'options.op', options?.op ?? 'sum', REDUCE_OPS);
    const list = this.checkTensors(op, checkTensorList(op, tensors), true);
    if (reduce === 'avg') {
      const integral = list.find((tensor) => !isFloatingPoint(tensor.dtype));
      if (integral) {
        throw new FlodlError('ERR_DTYPE', "op 'avg' needs floating-point tensors", {
          op,
          expected: 'float16, bfloat16, float32 or float64 tensors (or use op: sum and divide)',
          got: integral.describe(),
        });
      }
    }
    if (list.length === 0) return;
    collectives.allReduce(
      this.id,
      list.map((tensor) => tensor._h),
      reduce,
    );
  }

  /**
   * Copies rank `root`'s `tensors` into every other rank's `tensors`, in place.
   *
   * @param tensors the same shapes and dtypes, in the same order, on every rank
   * @param root the rank whose values win
   *
   * **Shape**: any; unchanged.
   * @throws FlodlError ERR_INVALID_ARGUMENT, ERR_DEVICE, ERR_TIMEOUT, ERR_RANK_FAILED, ERR_DISPOSED
   * @example
   * group.broadcast(model.parameters(), 0);
   *
   * PyTorch: `torch.distributed.broadcast(t, src=root)` for each tensor.
   */
  broadcast(tensors: Tensor | readonly Tensor[], root: number): void {
    const op = 'ProcessGroup.broadcast';
    this.checkLive(op);
    const list = this.checkTensors(op, checkTensorList(op, tensors), true);
    this.checkRank(op, 'root', root);
    if (list.length === 0) return;
    collectives.broadcast(
      this.id,
      list.map((tensor) => tensor._h),
      root,
    );
  }

  /**
   * Every rank's `tensor`, in rank order, as new tensors.
   *
   * **Shape**: `tensor` `[*]` → `worldSize` tensors `[*]`.
   * @throws FlodlError ERR_INVALID_ARGUMENT, ERR_DEVICE (gloo with CUDA tensors), ERR_TIMEOUT,
   *   ERR_RANK_FAILED, ERR_DISPOSED
   * @example
   * const [fromRank0, fromRank1] = group.allGather(loss);
   *
   * PyTorch: `torch.distributed.all_gather(outputs, t)`.
   */
  allGather(tensor: Tensor): Tensor[] {
    const op = 'ProcessGroup.allGather';
    this.checkLive(op);
    if (!(tensor instanceof Tensor)) throw invalidArgument(op, 'tensor', 'a Tensor', tensor);
    this.checkTensors(op, checkTensorList(op, tensor), false);
    const handles = collectives.allGather(this.id, tensor._h);
    return handles.map((handle) => new Tensor(handle));
  }

  /**
   * Returns once every rank has called `barrier()`.
   * @throws FlodlError ERR_TIMEOUT, ERR_RANK_FAILED, ERR_DISPOSED
   * @example group.barrier();
   *
   * PyTorch: `torch.distributed.barrier()`.
   */
  barrier(): void {
    const op = 'ProcessGroup.barrier';
    this.checkLive(op);
    collectives.barrier(this.id);
  }

  /**
   * Leaves the group and frees it (and, on rank 0, the rendezvous store). Safe to call twice.
   * PyTorch: `torch.distributed.destroy_process_group()`.
   */
  destroy(): void {
    if (this.id < 0) return;
    const id = this.id;
    this.id = -1;
    collectives.destroyGroup(id, false);
  }

  /**
   * Tears the group down without waiting for peers (NCCL communicators are aborted); use it
   * after a failure. A collective still in flight finishes off the calling thread. Safe to call twice.
   * PyTorch: `ProcessGroupNCCL.abort()`.
   */
  abort(): void {
    if (this.id < 0) return;
    const id = this.id;
    this.id = -1;
    collectives.destroyGroup(id, true);
  }

  [Symbol.dispose](): void {
    this.destroy();
  }

  private checkLive(op: string): void {
    if (this.id < 0) {
      throw new FlodlError('ERR_DISPOSED', 'the process group was destroyed', {
        op,
        expected: 'a live group (create a new one with createProcessGroup)',
        got: `a destroyed ${this.backend} group`,
      });
    }
  }

  private checkRank(op: string, name: string, value: unknown): void {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value >= this.worldSize) {
      throw invalidArgument(op, name, `a rank in [0, ${this.worldSize - 1}]`, value);
    }
  }

  // One device the backend takes, and dtypes it can carry.
  private checkTensors(op: string, list: Tensor[], cudaWithGloo: boolean): Tensor[] {
    if (this.backend === 'gloo') {
      const refused = list.find(
        (tensor) => tensor.dtype === 'bool' || (tensor.dtype === 'bfloat16' && !glooHasBfloat16()),
      );
      if (refused) {
        throw new FlodlError('ERR_DTYPE', `gloo cannot reduce ${refused.dtype} tensors`, {
          op,
          expected:
            'float16, float32, float64, int32, int64 or uint8 tensors (bfloat16 from libtorch 2; cast bool to uint8)',
          got: refused.describe(),
        });
      }
    }
    const devices = [...new Set(list.map((tensor) => tensor.device))];
    if (devices.length > 1) {
      throw new FlodlError('ERR_DEVICE', 'tensors are on different devices', {
        op,
        expected: `every tensor on ${this.device}`,
        got: devices.join(', '),
      });
    }
    const device = devices[0];
    if (device === undefined) return list;
    if (this.backend === 'nccl' && device !== this.device) {
      throw new FlodlError(
        'ERR_DEVICE',
        `the nccl group of rank ${this.rank} reduces tensors on ${this.device}`,
        {
          op,
          expected: `tensors on ${this.device} (move them with .to('${this.device}'), or use a gloo group for CPU tensors)`,
          got: `tensors on ${device}`,
        },
      );
    }
    if (this.backend === 'gloo' && device !== 'cpu' && !(cudaWithGloo && nativeBuildInfo().cuda)) {
      throw new FlodlError('ERR_DEVICE', 'gloo cannot take CUDA tensors here', {
        op,
        expected: 'CPU tensors (gloo stages CUDA tensors only for allReduce and broadcast), or an nccl group',
        got: `tensors on ${device}`,
      });
    }
    return list;
  }
}

function resolveDevice(op: string, options: ProcessGroupOptions): Device {
  if (options.backend === 'gloo') {
    if (options.device !== undefined) {
      throw invalidArgument(
        op,
        'device',
        'no device for a gloo group (it takes the tensors where they are)',
        options.device,
      );
    }
    return 'cpu';
  }
  const count = cudaDeviceCount();
  if (count === 0) {
    throw new FlodlError('ERR_DEVICE', 'nccl needs a CUDA device and none is visible', {
      op,
      expected: 'a visible GPU (check CUDA_VISIBLE_DEVICES), or backend: gloo for CPU tensors',
      got: 'cuda.deviceCount() = 0',
    });
  }
  const index = options.device === undefined ? options.rank % count : deviceCode(op, options.device);
  if (index < 0)
    throw invalidArgument(op, 'device', "a CUDA device ('cuda:N') for an nccl group", options.device);
  if (index >= count) {
    throw new FlodlError('ERR_DEVICE', `cuda:${index} does not exist`, {
      op,
      expected: `a device in cuda:0 … cuda:${count - 1}`,
      got: String(options.device),
    });
  }
  return deviceName(index);
}

/**
 * Joins a process group: rank 0 opens a c10d TCPStore on `host:port`, every rank dials it,
 * and the backend connects all ranks to each other. Blocks until all `worldSize` ranks have
 * joined, at most `timeoutMs`.
 *
 * @param options backend, rank, worldSize, port; host (default `'127.0.0.1'`), timeoutMs
 *   (default 300000), device (nccl). Gloo binds the interface named by `GLOO_SOCKET_IFNAME`,
 *   else loopback for a loopback host, else the address of this machine's hostname.
 * @throws FlodlError ERR_INVALID_ARGUMENT for bad or misspelled options or a backend this build
 *   lacks, ERR_DEVICE for nccl without a GPU, ERR_TIMEOUT when not every rank joined in time,
 *   ERR_IO when the port is taken
 * @example
 * using group = createProcessGroup({ backend: 'gloo', rank, worldSize: 2, port: 29500 });
 * group.allReduce(gradients, { op: 'avg' });
 *
 * PyTorch: `torch.distributed.init_process_group(backend, init_method='tcp://host:port', rank, world_size, timeout)`.
 */
export function createProcessGroup(options: ProcessGroupOptions): ProcessGroup {
  const op = 'createProcessGroup';
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(op, 'options', 'an options object', options);
  }
  checkOptions(op, options, GROUP_OPTIONS);
  const backend = checkOneOf(op, 'backend', options.backend, BACKENDS);
  const worldSize = checkInteger(op, 'worldSize', options.worldSize, 1);
  const rank = checkNonNegativeInteger(op, 'rank', options.rank);
  if (rank >= worldSize) throw invalidArgument(op, 'rank', `a rank in [0, ${worldSize - 1}]`, rank);
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host.trim() === '') {
    throw invalidArgument(op, 'host', 'a host name or address', options.host);
  }
  const port = options.port;
  if (typeof port !== 'number' || !Number.isSafeInteger(port) || port < 1 || port > 65535) {
    throw invalidArgument(op, 'port', 'an integer in [1, 65535]', port);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    throw invalidArgument(op, 'timeoutMs', 'a positive integer (milliseconds)', options.timeoutMs);
  }
  if (!distributedInfo()[backend]) {
    throw invalidArgument(
      op,
      'backend',
      `a backend this build has (${BACKENDS.filter((name) => distributedInfo()[name]).join(', ') || 'none'}; rebuild against a CUDA PyTorch for nccl)`,
      backend,
    );
  }
  const device = resolveDevice(op, options);
  const storeId = collectives.createStore(host, port, worldSize, rank === 0, timeoutMs);
  try {
    const deviceIndex = backend === 'nccl' ? deviceCode(op, device) : -1;
    const id = collectives.createGroup(storeId, backend, rank, worldSize, timeoutMs, 'flodl/', deviceIndex);
    return new ProcessGroup(id, backend, rank, worldSize, device);
  } finally {
    collectives.freeStore(storeId); // the group keeps its own reference to the store
  }
}

/** c10d collectives. PyTorch: `torch.distributed`. */
export const distributed = { isAvailable, createProcessGroup };
