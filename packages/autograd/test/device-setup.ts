// The device tier: `FLODL_TEST_DEVICE=cuda` (`pnpm test:gpu`) runs this package's cases with
// CUDA as the default device (see @flodl/testing's setupTestDevice).

import { backends, setDefaultDevice } from '@flodl/tensor-native';
import { setupTestDevice } from '@flodl/testing';

setupTestDevice({ backends, setDefaultDevice });
