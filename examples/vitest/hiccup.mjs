// A hiccup fixture for vitest: one `hiccup serve` per test file (startHiccup in beforeAll), one
// session per test (createSession), and the session's ledger, outcome and verdict over the control
// API (docs/CONTROL-API.md). HICCUP_BIN names the binary (default: build/hiccup of this checkout).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A package from the pinned install (scripts/install_examples.sh): $HICCUP_EXAMPLE_MODULES. */
export function load(name) {
  const modules = process.env.HICCUP_EXAMPLE_MODULES || join(repoRoot, '.cache', 'examples-vitest', 'node_modules');
  return createRequire(join(modules, 'noop.js'))(name);
}

/** Starts `hiccup serve` with no scenario; resolves to { url, stop() }. */
export async function startHiccup() {
  const bin = process.env.HICCUP_BIN || join(repoRoot, 'build', 'hiccup');
  // stderr is inherited, so a server that cannot start says why; an exit before the first line
  // (the base URL) fails the start instead of hanging until the hook's timeout.
  const child = spawn(bin, ['serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    child.on('error', (e) => reject(new Error(`${bin} serve did not start: ${e.message}`)));
    child.once('exit', (code) => reject(new Error(`${bin} serve exited ${code} before printing its base URL`)));
    createInterface({ input: child.stdout }).once('line', resolve);
  });
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
  return { url, stop };
}

async function call(url, method, body) {
  const r = await fetch(url, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(json.error)}`);
  return json;
}

/** Creates a session playing the scenario file at `path`. */
export async function createSession(server, path) {
  const scenario = JSON.parse(readFileSync(path, 'utf8'));
  const { session } = await call(`${server.url}/_hiccup/sessions`, 'POST', { scenario });
  const control = `${server.url}/_hiccup/sessions/${session.id}`;
  return {
    baseURL: session.base_url,
    recordExecution: (name, args, call_id) => call(`${control}/executions`, 'POST', { name, args, call_id }),
    recordOutcome: (outcome, final_text = '') => call(`${control}/outcome`, 'POST', { outcome, final_text }),
    verdict: () => call(`${control}/verdict`, 'GET'),
    delete: () => call(control, 'DELETE'),
  };
}
