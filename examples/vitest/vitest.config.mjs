// vitest configuration without imports (the packages live in .cache/examples-vitest, not beside
// this file): test/expect as globals, and Vite's cache in the install cache, not the source tree.
export default {
  cacheDir: '../../.cache/examples-vitest/vite',
  test: { globals: true },
};
