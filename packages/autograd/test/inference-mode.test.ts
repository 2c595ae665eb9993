// inferenceMode against PyTorch's torch.inference_mode(), scenario by scenario
// (test/fixtures/inference-mode.json, from scripts/make-goldens-inference-mode.py).
import { liveTensorCount, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { caught, readFixture } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import {
  enableGrad,
  inferenceMode,
  isGradEnabled,
  isInferenceModeEnabled,
  noGrad,
  Variable,
} from '../src/index.js';

interface Fixture {
  meta: { torch: string };
  scenarios: { name: string; expected: Record<string, unknown> }[];
}

const fixture = readFixture<Fixture>(new URL('./fixtures/inference-mode.json', import.meta.url));

const f32 = (data: number[]) => Tensor.from(data, undefined, { dtype: 'float32' });
const weight = () => new Variable(f32([1, 2, 3]), true);
const plain = () => f32([0.5, -1, 2]);

function describeTensor(tensor: Tensor) {
  return {
    requiresGrad: tensor.requiresGrad,
    gradFn: tensor.gradFn,
    isInference: tensor.isInference,
    data: Array.from(tensor.toTypedArray(), Number),
  };
}

/** What `run` threw (any value, not only a FlodlError). */
function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

const modes = () => ({ gradEnabled: isGradEnabled(), inferenceEnabled: isInferenceModeEnabled() });

function throwsAutograd(run: () => unknown): boolean {
  const error = caught(run);
  expect(error.code).toBe('ERR_AUTOGRAD');
  expect(error.nativeMessage).toMatch(/inference tensor/i);
  return true;
}

// Each scenario as make-goldens-inference-mode.py writes it, with inferenceMode for
// torch.inference_mode().
const SCENARIOS: Record<string, () => Record<string, unknown>> = {
  'an op on a tensor that requires grad': () => {
    const w = weight();
    let inside = {};
    const y = inferenceMode(() => {
      inside = modes();
      return w.mul(w);
    });
    return { result: describeTensor(y), inside, after: modes() };
  },
  'a factory': () => ({ result: describeTensor(inferenceMode(() => zeros([2]))) }),
  'enableGrad inside': () => {
    const w = weight();
    let inside = {};
    const y = inferenceMode(() =>
      enableGrad(() => {
        inside = modes();
        return w.mul(w);
      }),
    );
    return { result: describeTensor(y), inside };
  },
  'noGrad inside': () => {
    const w = weight();
    let inside = {};
    const y = inferenceMode(() => {
      const result = noGrad(() => w.mul(w));
      inside = modes();
      return result;
    });
    return { result: describeTensor(y), inside };
  },
  'mode false inside': () => {
    const w = weight();
    let inside = {};
    let back = {};
    const y = inferenceMode(() => {
      const result = inferenceMode(
        () => {
          inside = modes();
          return w.mul(w);
        },
        { mode: false },
      );
      back = modes();
      return result;
    });
    return { result: describeTensor(y), inside, back };
  },
  nested: () => {
    const w = weight();
    let back = {};
    const y = inferenceMode(() => {
      const result = inferenceMode(() => w.mul(w));
      back = modes();
      return result;
    });
    return { result: describeTensor(y), back, after: modes() };
  },
  'a view of a normal tensor': () => {
    const x = plain();
    return { result: describeTensor(inferenceMode(() => x.view(3))) };
  },
  'an in-place change of a normal tensor': () => {
    const x = plain();
    inferenceMode(() => x.add_(1));
    return { result: describeTensor(x) };
  },
  'an inference tensor outside': () => {
    const w = weight();
    const y = inferenceMode(() => w.mul(w));
    return {
      savedForBackwardThrows: throwsAutograd(() => y.mul(w)),
      inPlaceThrows: throwsAutograd(() => y.add_(1)),
      requiresGradThrows: throwsAutograd(() => y.requiresGrad_()),
      plainOp: describeTensor(y.add(1)),
    };
  },
  'a clone outside trains': () => {
    const w = weight();
    const clone = inferenceMode(() => w.mul(w)).clone();
    clone.mul(w).sum().backward();
    return { clone: describeTensor(clone), grad: Array.from(w.grad!.toTypedArray(), Number) };
  },
  'an exception inside': () => {
    thrown(() =>
      inferenceMode(() => {
        throw new RangeError('boom');
      }),
    );
    return { after: modes() };
  },
};

describe(`inferenceMode (PyTorch ${fixture.meta.torch})`, () => {
  for (const { name, expected } of fixture.scenarios) {
    it(name, () => {
      const run = SCENARIOS[name];
      expect(run, `a scenario named '${name}'`).toBeDefined();
      tidy(() => {
        expect(run!()).toEqual(expected);
      });
    });
  }

  it('covers every scenario of the fixture', () => {
    expect(Object.keys(SCENARIOS).sort()).toEqual(fixture.scenarios.map((scenario) => scenario.name).sort());
  });

  it('returns what fn returns and passes its exception through unchanged', () => {
    expect(inferenceMode(() => 42)).toBe(42);
    const boom = new RangeError('boom');
    expect(
      thrown(() =>
        inferenceMode(() => {
          throw boom;
        }),
      ),
    ).toBe(boom);
    expect(
      thrown(() =>
        inferenceMode(() => {
          throw 7;
        }),
      ),
    ).toBe(7);
    expect(modes()).toEqual({ gradEnabled: true, inferenceEnabled: false });
  });

  it('restores the outer mode when an inner one throws', () => {
    inferenceMode(() => {
      thrown(() =>
        inferenceMode(
          () => {
            throw new Error('inner');
          },
          { mode: false },
        ),
      );
      expect(modes()).toEqual({ gradEnabled: false, inferenceEnabled: true });
    });
    noGrad(() => {
      thrown(() =>
        inferenceMode(() => {
          throw new Error('inner');
        }),
      );
      expect(modes()).toEqual({ gradEnabled: false, inferenceEnabled: false });
    });
    expect(modes()).toEqual({ gradEnabled: true, inferenceEnabled: false });
  });

  it('refuses a non-function, an unknown option and an async function', async () => {
    expect(caught(() => inferenceMode(42 as never)).code).toBe('ERR_INVALID_ARGUMENT');
    const option = caught(() => inferenceMode(() => 1, { enabled: false } as never));
    expect(option.code).toBe('ERR_INVALID_ARGUMENT');
    expect(option.message).toContain("unknown option 'enabled'");
    expect(caught(() => inferenceMode(() => 1, { mode: 'no' as never })).message).toContain('invalid mode');
    const pending = Promise.resolve(1);
    const error = caught(() => inferenceMode(() => pending));
    expect(error.code).toBe('ERR_AUTOGRAD');
    expect(error.message).toMatchInlineSnapshot(`
      "inferenceMode: inferenceMode cannot follow async functions: the mode would leak into other work
        expected: a synchronous function
        got: a function returning a Promise"
    `);
    await pending;
    expect(modes()).toEqual({ gradEnabled: true, inferenceEnabled: false });
  });

  it('leaks no tensor', () => {
    const before = liveTensorCount();
    tidy(() => {
      const w = weight();
      for (let step = 0; step < 100; step++) inferenceMode(() => w.mul(w).relu().sum());
    });
    expect(liveTensorCount()).toBe(before);
  });
});
