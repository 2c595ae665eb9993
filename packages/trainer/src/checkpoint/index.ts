// Checkpoint bundles: one stem, the model (PyTorch-loadable safetensors), each rank's optimizer,
// the scheduler and the meta a run resumes from exactly; each file's checksum; the savePath lock.
export { CHECKSUM_ALGORITHM } from './checksum.js';
export { acquireSaveLock, lockPathOf, type SaveLock, type SaveLockOwner } from './lock.js';
export {
  type BundleFile,
  type BundleReason,
  CHECKPOINT_FORMAT,
  CHECKPOINT_VERSION,
  type CheckpointMeta,
  type DataCursor,
  MAX_META_BYTES,
} from './meta.js';
export { type BundlePaths, bundlePaths, periodicBundles, resolveBundle } from './paths.js';
export { type CheckpointBundle, readCheckpoint } from './read.js';
