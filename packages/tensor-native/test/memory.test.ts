import { describe, expect, it } from 'vitest';
import {
  beginScope,
  endScope,
  FlodlError,
  keep,
  liveTensorCount,
  ones,
  rand,
  scopeDepth,
  type Tensor,
  tidy,
  zeros,
} from '../src/index.js';

describe('tensor lifetime', () => {
  it('dispose frees once and later use throws ERR_DISPOSED', () => {
    const before = liveTensorCount();
    const t = ones([2, 2]);
    expect(liveTensorCount()).toBe(before + 1);
    t.dispose();
    t.dispose();
    expect(liveTensorCount()).toBe(before);
    expect(t.isLive).toBe(false);
    expect(() => t.add(1)).toThrow(FlodlError);
    try {
      t.sum();
    } catch (error) {
      expect(FlodlError.isInstance(error) && error.code).toBe('ERR_DISPOSED');
    }
    expect(String(t)).toBe('tensor(<disposed>)');
  });

  it('`using` disposes at the end of the block', () => {
    const before = liveTensorCount();
    {
      using t = zeros([3]);
      expect(t.numel).toBe(3);
    }
    expect(liveTensorCount()).toBe(before);
  });

  it('tidy frees temporaries and keeps what it returns, including nested containers', () => {
    const before = liveTensorCount();
    const result = tidy(() => {
      const a = ones([4]);
      const b = a.mul(2).add(1);
      return { total: b.sum(), parts: [b.max(), b.min()] };
    });
    expect(liveTensorCount()).toBe(before + 3);
    expect(result.total.item()).toBe(12);
    result.total.dispose();
    for (const part of result.parts) part.dispose();
    expect(liveTensorCount()).toBe(before);
  });

  it('keep() lets a tensor outlive every scope', () => {
    const before = liveTensorCount();
    let kept: Tensor | undefined;
    tidy(() => {
      tidy(() => {
        kept = keep(ones([2]).add(1));
      });
    });
    expect(liveTensorCount()).toBe(before + 1);
    expect(kept!.toArray()).toEqual([2, 2]);
    kept!.dispose();
  });

  it('nested tidy hands returned tensors to the enclosing scope', () => {
    const before = liveTensorCount();
    tidy(() => {
      const inner = tidy(() => ones([3]).mul(3));
      expect(inner.isLive).toBe(true);
      expect(liveTensorCount()).toBe(before + 1);
    });
    expect(liveTensorCount()).toBe(before);
  });

  it('tidy frees everything when fn throws', () => {
    const before = liveTensorCount();
    expect(() =>
      tidy(() => {
        ones([5]);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(liveTensorCount()).toBe(before);
    expect(scopeDepth()).toBe(0);
  });

  it('tidy refuses async functions and leaks nothing', () => {
    const before = liveTensorCount();
    expect(() => tidy((async () => ones([1])) as unknown as () => number)).toThrow(/async/);
    expect(liveTensorCount()).toBe(before);
  });

  it('beginScope/endScope work across awaits and reject out-of-order closes', async () => {
    const before = liveTensorCount();
    const outer = beginScope('outer');
    const a = ones([2]);
    await new Promise((resolve) => setTimeout(resolve, 1));
    const inner = beginScope('inner');
    ones([2]);
    expect(() => endScope(outer)).toThrowError(expect.objectContaining({ code: 'ERR_SCOPE' }));
    endScope(inner);
    endScope(outer, [a]);
    expect(liveTensorCount()).toBe(before + 1);
    a.dispose();
  });

  it('100k small ops inside scopes keep the live count and RSS flat', () => {
    const before = liveTensorCount();
    const x = keep(rand([64]));
    const step = () => {
      for (let k = 0; k < 1000; k++) {
        tidy(() => x.mul(2).add(1).relu().sum());
      }
    };
    for (let round = 0; round < 10; round++) tidy(step);
    const rssWarm = process.memoryUsage.rss();
    for (let round = 0; round < 100; round++) tidy(step);
    const rssAfter = process.memoryUsage.rss();
    expect(liveTensorCount()).toBe(before + 1);
    // 400k tensors were created in the measured part: a leak of even 64 bytes each would show.
    expect(rssAfter - rssWarm).toBeLessThan(24 * 1024 * 1024);
    x.dispose();
  });
});

describe('the garbage-collection safety net', () => {
  it('frees tensors that were dropped without dispose once they are collected', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc === undefined) return; // needs --expose-gc (the vitest config passes it)
    const before = liveTensorCount();
    (() => {
      for (let k = 0; k < 100; k++) ones([16]);
    })();
    expect(liveTensorCount()).toBe(before + 100);
    for (let round = 0; round < 20 && liveTensorCount() > before; round++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(liveTensorCount()).toBe(before);
  });

  it('never frees a disposed tensor twice after its slot is reused', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc === undefined) return;
    (() => {
      for (let k = 0; k < 300; k++) ones([1]).dispose();
    })();
    const survivors = Array.from({ length: 50 }, () => keep(ones([1])));
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc();
    for (const tensor of survivors) expect(tensor.isLive).toBe(true);
    for (const tensor of survivors) tensor.dispose();
  });
});
