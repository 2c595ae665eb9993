// One class identity across copies of a package: the ESM and the CommonJS builds, or two
// installed versions, each define their own classes; `instanceof` must still hold.

/** Any class, abstract or with a protected constructor included. */
type AnyClass = { readonly prototype: object };

/**
 * Makes `value instanceof base` true for instances of `base` made by any copy of its package:
 * their prototype carries `Symbol.for(key)`, which `base` checks. Subclasses of `base` keep the
 * ordinary prototype check (`x instanceof Linear` is not widened to every module).
 *
 * @param key a stable, package-qualified name, e.g. `'flodl.Tensor'`
 * @example
 * ```ts
 * export class Module { ... }
 * shareClassIdentity(Module, 'flodl.nn.Module');
 * ```
 */
export function shareClassIdentity(base: AnyClass, key: string): void {
  const marker = Symbol.for(key);
  Object.defineProperty(base.prototype, marker, { value: true });
  Object.defineProperty(base, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      if (this !== base) return Function.prototype[Symbol.hasInstance].call(this, value);
      return (
        (typeof value === 'object' || typeof value === 'function') &&
        value !== null &&
        (value as Record<symbol, unknown>)[marker] === true
      );
    },
  });
}
