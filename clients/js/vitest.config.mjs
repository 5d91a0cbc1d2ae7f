// The helper's own tests (ctest clients.vitest-helper), run with the pinned vitest of examples/vitest
// (.cache/examples-vitest): test/expect/hooks as globals, Vite's cache beside that install.
export default {
  cacheDir: '../../.cache/examples-vitest/vite-clients-js',
  test: { globals: true, include: ['test/**/*.test.mjs'], testTimeout: 30000, hookTimeout: 30000 },
};
