// vitest configuration for the example. The packages live in .cache/examples-vitest (installed by
// scripts/install_examples.sh; $HICCUP_EXAMPLE_MODULES names its node_modules), not beside this
// file, so the two packages the test imports are aliased there; a project with its own
// node_modules (npm install ./clients/js openai vitest) needs no alias. test/expect and the hooks
// as globals; Vite's cache in the install cache, not the source tree.
import { fileURLToPath } from 'node:url';

const modules = process.env.HICCUP_EXAMPLE_MODULES ||
  fileURLToPath(new URL('../../.cache/examples-vitest/node_modules', import.meta.url));

export default {
  cacheDir: '../../.cache/examples-vitest/vite',
  resolve: {
    alias: {
      '@hiccup/test-helper': `${modules}/@hiccup/test-helper`,
      openai: `${modules}/openai`,
    },
  },
  test: { globals: true },
};
