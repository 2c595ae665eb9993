// The device tier: `FLODL_TEST_DEVICE=cuda` (`pnpm test:gpu`) runs this package's cases with
// CUDA as the default device, so every factory without an explicit device (and every layer's
// parameters) lands there. TF32 convolutions are turned off so float32 goldens hold.
import { backends, type Device, setDefaultDevice } from '../src/index.js';

const device = process.env.FLODL_TEST_DEVICE;
if (device !== undefined && device !== '' && device !== 'cpu') {
  backends.cudnn.allowTF32 = false;
  setDefaultDevice(device as Device);
}
