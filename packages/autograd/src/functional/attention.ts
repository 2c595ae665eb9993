// Filled in by the functional-ops work; see index.ts.
export {};
