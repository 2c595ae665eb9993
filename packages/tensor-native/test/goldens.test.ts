// Golden-fixture correctness tests: every op of the Tensor API against PyTorch's results,
// recorded in test/fixtures/goldens.json by scripts/make-goldens.py (regenerate with
// `pnpm --filter @flodl/tensor-native run goldens`). No Python is needed here.
import { describe, expect, it } from 'vitest';
import { getDefaultDevice, liveTensorCount, manualSeed, type Tensor, tidy } from '../src/index.js';
import {
  decodeArgument,
  expectResult,
  expectTensor,
  type GoldenCase,
  loadGoldens,
  makeTensor,
  readValues,
  resolveFunction,
  runCase,
} from './helpers/goldens.js';

const goldens = loadGoldens();
const startingCount = liveTensorCount();

/**
 * Cases where our implementation disagrees with PyTorch, keyed by 'group / name'. They run
 * as `it.fails`, so the suite stays green until the bug is fixed (then the entry must go).
 */
// Cases our implementation gets wrong, keyed 'group / name', with the reason. Keep it empty:
// a fixed bug must leave this list (it.fails then fails loudly).
const KNOWN_BUGS: Record<string, string> = {};

/** The device tier (`pnpm test:gpu`): cases libtorch itself has no CUDA kernel for, with the reason. */
const onDevice = getDefaultDevice() !== 'cpu';
const NOT_ON_CUDA: Record<string, string> = {
  'linalg / matmul int64': 'cuBLAS has no integer matmul (PyTorch refuses it too)',
  'linalg / matmul int32': 'cuBLAS has no integer matmul',
  'linalg / dot int64': 'cuBLAS has no integer dot',
  'linalg / addmm int64 beta alpha': 'cuBLAS has no integer addmm',
};

function groupsOf(cases: readonly GoldenCase[]): Map<string, GoldenCase[]> {
  const groups = new Map<string, GoldenCase[]>();
  for (const golden of cases) {
    const members = groups.get(golden.group) ?? [];
    members.push(golden);
    groups.set(golden.group, members);
  }
  return groups;
}

describe(`goldens (PyTorch ${goldens.meta.torch})`, () => {
  for (const [group, cases] of groupsOf(goldens.cases)) {
    describe(group, () => {
      for (const golden of cases) {
        const bug = KNOWN_BUGS[`${group} / ${golden.name}`];
        const test = bug === undefined ? it : it.fails;
        const skip = onDevice && NOT_ON_CUDA[`${group} / ${golden.name}`] !== undefined;
        (skip ? it.skip : test)(golden.name, () => {
          tidy(() => {
            expectResult(runCase(golden), golden.expected, golden);
          });
        });
      }
    });
  }

  describe('toString', () => {
    for (const golden of goldens.strings) {
      const bug = KNOWN_BUGS[`toString / ${golden.name}`];
      const test = bug === undefined ? it : it.fails;
      test(golden.name, () => {
        tidy(() => {
          expect(String(makeTensor(golden.input))).toBe(golden.expected);
        });
      });
    }
  });

  describe('random numbers', () => {
    for (const golden of goldens.random) {
      const draw = (): number[] =>
        tidy(() => {
          manualSeed(golden.seed);
          const { owner, run } = resolveFunction(golden.op);
          return readValues(run.apply(owner, golden.args.map(decodeArgument)) as Tensor);
        });

      it(`${golden.name} repeats itself`, () => {
        expect(draw()).toEqual(draw());
      });

      const bug = KNOWN_BUGS[`random numbers / ${golden.name}`];
      const test = bug === undefined ? it : it.fails;
      // The goldens are draws of the CPU generator; CUDA's (Philox) draws other numbers, in PyTorch too.
      (onDevice ? it.skip : test)(`${golden.name} matches PyTorch bit for bit`, () => {
        tidy(() => {
          manualSeed(golden.seed);
          const { owner, run } = resolveFunction(golden.op);
          expectTensor(
            run.apply(owner, golden.args.map(decodeArgument)),
            golden.expected,
            { atol: 0, rtol: 0 },
            'sample',
          );
        });
      });
    }
  });

  it('lists only known bugs that name a case', () => {
    const names = new Set([
      ...goldens.cases.map((golden) => `${golden.group} / ${golden.name}`),
      ...goldens.strings.map((golden) => `toString / ${golden.name}`),
      ...goldens.random.map((golden) => `random numbers / ${golden.name}`),
    ]);
    expect(Object.keys(KNOWN_BUGS).filter((key) => !names.has(key))).toEqual([]);
    expect(Object.keys(NOT_ON_CUDA).filter((key) => !names.has(key))).toEqual([]);
  });

  it('frees every tensor the cases created', () => {
    expect(liveTensorCount()).toBe(startingCount);
  });
});
