// @flodl/testing: the test kit every flodl package's tests share (private, never published).
export {
  compareValues,
  EXACT,
  expectClose,
  fixtureData,
  isClose,
  isTensorLike,
  readValues,
  type TensorFixture,
  type TensorLike,
} from './close.js';
export {
  type DeviceControls,
  forDevice,
  onDevice,
  setupTestDevice,
  type Tolerance,
  testDevice,
} from './device.js';
export { decodeNumber, type EncodedNumber, readFixture } from './encoding.js';
export { caught, caughtAsync, expectFlodlError, type FlodlErrorLike, isFlodlError } from './errors.js';
export { type CapturedWarnings, captureWarnings, type IsolatedRun, runIsolated } from './noise.js';
export { alive } from './process.js';
export { SeededDraw } from './random.js';
