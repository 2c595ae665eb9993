// The device tier: `FLODL_TEST_DEVICE=cuda` (`pnpm test:gpu`) runs this package's cases with
// CUDA as the default device (see @flodl/testing's setupTestDevice).
import { setupTestDevice } from '@flodl/testing';
import { backends, setDefaultDevice } from '../src/index.js';

setupTestDevice({ backends, setDefaultDevice });
