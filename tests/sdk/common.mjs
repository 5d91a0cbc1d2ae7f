// Shared helpers of the SDK interop tests (tests/sdk/README.md): load a pinned SDK from the install
// cache, write a scenario, run `hiccup serve` on it for one test, read its journal afterwards, and
// classify the errors an SDK throws. No dependencies beyond Node's standard library.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');

/** The hiccup binary: $HICCUP_BIN (set by ctest), else build/hiccup. */
export const hiccupBin = process.env.HICCUP_BIN || join(repoRoot, 'build', 'hiccup');
/** Where scripts/install_sdks.sh put node_modules: $HICCUP_SDK_MODULES, else .cache/sdk/node_modules. */
export const sdkModules = process.env.HICCUP_SDK_MODULES || join(repoRoot, '.cache', 'sdk', 'node_modules');

const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies;

/**
 * Loads a pinned SDK (`openai`, `@anthropic-ai/sdk`, `@google/genai`) from the install cache and
 * checks its version against tests/sdk/package.json. Throws with the install script's message when
 * the SDK is missing, so the test fails (never skips) when the install failed.
 */
export function loadSdk(name) {
  checkPinned(name);
  return createRequire(join(sdkModules, 'noop.js'))(name);
}

/**
 * Loads `name/subpath` of a pinned SDK whose entry points are subpaths
 * (`@modelcontextprotocol/sdk`, 'client/index.js'), after loadSdk's version check.
 */
export function loadSdkPath(name, subpath) {
  checkPinned(name);
  return createRequire(join(sdkModules, 'noop.js'))(`${name}/${subpath}`);
}

/** Throws loadSdk's message when the pinned version of `name` is not installed. */
function checkPinned(name) {
  const manifest = join(sdkModules, name, 'package.json');
  const installed = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : null;
  if (installed !== pinned[name]) {
    const log = join(sdkModules, '..', 'install.log');
    const tail = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-15).join('\n') : '(no install log)';
    throw new Error(`${name}@${pinned[name]} is not installed at ${sdkModules} (found ${installed ?? 'nothing'}): ` +
                    `run scripts/install_sdks.sh (the ctest fixture sdk.install does this; see its output).\n` +
                    `Last lines of ${log}:\n${tail}`);
  }
}

/** A scenario file body for `provider` with the given turns (SCENARIO-FORMAT.md). */
export function scenario(provider, name, turns) {
  return { schema: 1, name, provider, prompt: 'hello', turns };
}

/** One turn with one attempt streaming `events` (and optional `fault`). */
export function turn(...attempts) {
  return { attempts };
}

/** A follow-up turn that answers the tool results of a turn ending with calls (lint requires it). */
export const answerTurn = turn({ events: [{ text: 'Done.' }, { finish: 'stop' }] });

/**
 * Starts `hiccup serve` on `scn` (an object) on 127.0.0.1 with an ephemeral port and stalls scaled
 * to 20 ms per virtual second (`opts.stallMsPerS` overrides). Returns {url, stop()}; stop() sends
 * SIGTERM and resolves to the journal (an array of entries: index, method, target, turn, attempt,
 * response_status, played, fault, completed, …).
 */
export async function serve(scn, opts = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hiccup-sdk-'));
  const file = join(dir, `${scn.name}.json`);
  const journalFile = join(dir, 'journal.json');
  writeFileSync(file, JSON.stringify(scn, null, 2));
  if (!existsSync(hiccupBin)) throw new Error(`hiccup binary not found at ${hiccupBin} (set HICCUP_BIN or build it)`);
  const child = spawn(hiccupBin, ['serve', file, '--port', '0', '--stall-ms-per-s', String(opts.stallMsPerS ?? 20), '--journal', journalFile],
                      { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
  const url = await new Promise((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`hiccup serve printed no URL within 10 s; stderr:\n${stderr}`)), 10000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) { clearTimeout(timer); res(out.slice(0, nl).trim()); }
    });
    exited.then(({ code }) => { clearTimeout(timer); rej(new Error(`hiccup serve exited (${code}) before printing its URL; stderr:\n${stderr}`)); });
  });
  let stopped = null;
  const stop = () => {
    stopped ??= (async () => {
      child.kill('SIGTERM');
      const { code } = await exited;
      let journal = [];
      if (existsSync(journalFile)) journal = JSON.parse(readFileSync(journalFile, 'utf8'));
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`hiccup serve exited with ${code}; stderr:\n${stderr}`);
      return journal;
    })();
    return stopped;
  };
  return { url, stop, stderr: () => stderr };
}

/**
 * Runs `body(url)` against a server playing `scn` and returns {result, error, journal, ms}:
 * `error` is what body threw (undefined when it returned), `ms` its wall time. `opts` go to serve().
 */
export async function withServer(scn, body, opts = {}) {
  const server = await serve(scn, opts);
  const start = performance.now();
  let result, error;
  try {
    result = await body(server.url);
  } catch (e) {
    error = e ?? new Error('thrown: ' + e);
  }
  const ms = performance.now() - start;
  const journal = await server.stop();
  return { result, error, journal, ms, stderr: server.stderr() };
}

/** The error and its `cause` chain, outermost first. */
export function causes(err) {
  const out = [];
  for (let e = err; e && out.length < 10; e = e.cause) out.push(e);
  return out;
}

/** The low-level codes (`code` / `errno` names) in an error's cause chain, e.g. ECONNRESET. */
export function causeCodes(err) {
  return causes(err).map((e) => e.code).filter((c) => typeof c === 'string');
}

/** A one-line description of an error and its causes, for assertion messages. */
export function describeError(err) {
  if (err === undefined) return 'no error (the call succeeded)';
  return causes(err).map((e) => `${e?.constructor?.name ?? typeof e}${e?.code ? `[${e.code}]` : ''}` +
                                 `${e?.status !== undefined ? `(status ${e.status})` : ''}: ${e?.message ?? e}`).join(' <- ');
}

/**
 * The test's scripted tool-call arguments: nested objects, an array, numbers, null, escapes and
 * non-ASCII text (2- to 4-byte UTF-8), long enough for 3 fragments.
 */
export const nestedArgs = {
  command: './deploy.sh staging --force',
  options: { env: { region: 'eu-west-1', replicas: 3, canary: null }, tags: ['blue', 'grün', '青'] },
  note: 'Grüße aus Zürich — “quoted” \\ back\\slash, tab\tand emoji 🚀',
  nested: { deep: { deeper: [1, 2.5, { x: true }] } },
};

/** Scripted text pieces: non-ASCII, joined they make the expected reply. */
export const textPieces = ['Hello, wörld! ', 'Ünïcödé ✓ and 日本語 ', 'end. 🚀'];
export const fullText = textPieces.join('');
