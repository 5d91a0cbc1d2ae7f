// @hiccup/test-helper: `hiccup serve` as a test fixture for vitest and Jest (plain ESM, no
// dependency, Node >= 20). startHiccup() runs the server; server.createSession() makes a session
// from a scenario file or object (docs/CONTROL-API.md); a session records the agent's tool
// executions and outcome and judges them; assertVerdict() turns a verdict into an assertion whose
// message lists the violations, the harm first. useHiccup() wires it all into a test file's hooks.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** The control API refused a request (hiccup's error envelope), or the server could not start. */
export class HiccupError extends Error {
  constructor(message, { status = 0, code = '', problems = [] } = {}) {
    super(message);
    this.name = 'HiccupError';
    this.status = status;
    this.code = code;
    this.problems = problems;
  }
}

/** A verdict that is not as expected: an AssertionError-shaped error whose actual/expected are the
 * names of the invariants violated and of those wanted (none, or expectViolations'), so vitest
 * prints their diff under the message (the violations in full). */
export class VerdictError extends Error {
  constructor(message, { verdict, actual, expected }) {
    super(message);
    this.name = 'AssertionError';
    this.verdict = verdict;
    this.actual = actual;
    this.expected = expected;
    this.showDiff = true;
    // No frames: they would all be this helper's (afterEach), and runners print a code frame of
    // the first one under the verdict.
    this.stack = `${this.name}: ${message}`;
  }
}

/** The hiccup binary: `bin` when given, else $HICCUP_BIN, else `hiccup` on PATH. */
export function findBinary(bin) {
  const candidate = bin || process.env.HICCUP_BIN;
  if (candidate) return candidate;
  try {
    return execFileSync('/bin/sh', ['-c', 'command -v hiccup'], { encoding: 'utf8' }).trim();
  } catch {
    throw new HiccupError('hiccup is not on PATH: install it (the Debian package of scripts/package.sh, or cmake --install), or name the binary with HICCUP_BIN or startHiccup({ bin })');
  }
}

async function call(base, method, path, body) {
  let r;
  try {
    r = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new HiccupError(`${method} ${base}${path}: ${e.cause?.message ?? e.message} (is hiccup serve running?)`);
  }
  const text = await r.text();
  let json = {};
  try { json = text ? JSON.parse(text) : {}; } catch { /* not JSON: quoted below */ }
  if (!r.ok) {
    const error = json.error ?? {};
    const problems = error.problems ?? [];
    const details = problems.map((p) => `\n  ${p.pointer}: ${p.message}`).join('');
    throw new HiccupError(`${method} ${path}: ${r.status} ${error.code ?? ''}: ${error.message ?? text}${details}`,
      { status: r.status, code: error.code ?? '', problems });
  }
  return json;
}

function violationLine(v) {
  const where = ['request', 'turn', 'attempt'].filter((k) => v[k] !== undefined && v[k] !== null).map((k) => `${k} ${v[k]}`);
  return `${v.invariant}: ${v.message}${where.length ? ` [${where.join(', ')}]` : ''}`;
}

/** The verdict as a failing test shows it: a headline naming the first violation (hiccup lists the
 * harm first, its consequences after), each violation, the policy differences, the window when
 * judged over one, the recovery design the run showed, and the counts. */
export function formatVerdict(v) {
  const where = `session ${v.session}, scenario ${v.scenario}`;
  const vs = v.violations ?? [];
  const lines = [vs.length
    ? `hiccup verdict: ${v.verdict}: ${vs[0].invariant}${vs.length > 1 ? ` (+${vs.length - 1} more)` : ''} (${where})`
    : `hiccup verdict: ${v.verdict} (${where})`];
  for (const x of vs) lines.push(`  ${violationLine(x)}`);
  if (v.differences?.length) {
    lines.push('policy differences (not bugs unless the session is strict):');
    for (const x of v.differences) lines.push(`  ${violationLine(x)}`);
  }
  if (v.window) lines.push(`judged over a window: ${v.window.message ?? ''}`);
  if (v.design) lines.push(`recovery design shown: ${v.design} (${v.design_evidence ?? ''})`);
  lines.push(`${v.requests ?? 0} request(s), ${v.executions ?? 0} execution(s) recorded, outcome ${JSON.stringify(v.outcome ?? null)}`);
  return lines.join('\n');
}

/** Throws a VerdictError unless the verdict passed, or, with `violations`, unless it failed with
 * (at least) those invariants. */
export function assertVerdict(verdict, { violations } = {}) {
  const names = (verdict.violations ?? []).map((v) => v.invariant);
  if (!violations) {
    if (verdict.passed) return;
    throw new VerdictError(formatVerdict(verdict), { verdict, actual: names, expected: [] });
  }
  const missing = violations.filter((n) => !names.includes(n));
  if (verdict.verdict === 'fail' && missing.length === 0) return;
  throw new VerdictError(
    `hiccup did not report the expected violation(s) ${(missing.length ? missing : violations).join(', ')} of session ${verdict.session}:\n${formatVerdict(verdict)}`,
    { verdict, actual: names, expected: violations });
}

function scenarioBody(scenario) {
  // A file's text as is: the control API reads `//` comments as hiccup lint does.
  return typeof scenario === 'string' || scenario instanceof URL ? readFileSync(scenario, 'utf8') : scenario;
}

/** One control-API session: its scenario, base URLs per SDK, ledger, outcome and verdict. */
export class Session {
  constructor(base, info) {
    this.info = info;
    this.id = info.id;
    this.baseURL = info.base_url;
    /** Whether useHiccup's afterEach judges this session (see expectViolations). */
    this.checkVerdict = true;
    /** Invariants the test expects hiccup to report; null: expect a pass. */
    this.expectedViolations = null;
    this._base = base;
    this._path = `/_hiccup/sessions/${info.id}`;
  }

  /** OpenAI SDKs: baseURL + '/v1'. */
  get openaiBaseURL() { return `${this.baseURL}/v1`; }
  /** Anthropic SDK: baseURL. */
  get anthropicBaseURL() { return this.baseURL; }
  /** Google GenAI SDK: baseURL (httpOptions.baseUrl). */
  get geminiBaseURL() { return this.baseURL; }
  get baseURLs() { return { openai: this.openaiBaseURL, anthropic: this.anthropicBaseURL, gemini: this.geminiBaseURL }; }

  /** Records one real side effect of tool `name` when it runs; pass the provider's call id. */
  async recordExecution(name, args = {}, callId = undefined) {
    await call(this._base, 'POST', `${this._path}/executions`, { name, args, ...(callId ? { call_id: callId } : {}) });
  }

  /** Records what the agent reported: 'completed' or 'failed', with the final text it showed and
   * optionally all text it showed (then clean-output is judged). */
  async recordOutcome(outcome, finalText = undefined, shownText = undefined) {
    await call(this._base, 'POST', `${this._path}/outcome`, {
      outcome, ...(finalText !== undefined ? { final_text: finalText } : {}), ...(shownText !== undefined ? { shown_text: shownText } : {}),
    });
  }

  completed(finalText = '', shownText = undefined) { return this.recordOutcome('completed', finalText, shownText); }
  failed(shownText = undefined) { return this.recordOutcome('failed', undefined, shownText); }

  /** hiccup's verdict over the journal, ledger and outcome so far. */
  verdict() { return call(this._base, 'GET', `${this._path}/verdict`); }
  async journal() { return (await call(this._base, 'GET', `${this._path}/journal`)).journal; }
  async executions() { return (await call(this._base, 'GET', `${this._path}/executions`)).executions; }
  async reset() { this.info = (await call(this._base, 'POST', `${this._path}/reset`)).session; }
  async delete() { await call(this._base, 'DELETE', this._path); }

  /** The run must fail with (at least) these invariants: check() then fails when hiccup does not
   * report them (pin a known bug; notice when hiccup stops catching one). */
  expectViolations(...invariants) { this.expectedViolations = invariants; }

  /** Judges the session as the test expects (a pass, or expectViolations); throws VerdictError. */
  async check() {
    assertVerdict(await this.verdict(), this.expectedViolations ? { violations: this.expectedViolations } : {});
  }
}

/** Starts `hiccup serve` (no scenario) and resolves to a server once it printed its base URL; with
 * `url`, uses a server already running there instead. `bin`: the binary (default $HICCUP_BIN, else
 * hiccup on PATH); `args`: more arguments of `hiccup serve`. */
export async function startHiccup({ bin, args = [], url, startTimeoutMs = 10000 } = {}) {
  if (url || process.env.HICCUP_URL) return makeServer((url || process.env.HICCUP_URL).replace(/\/$/, ''), null);
  const binary = findBinary(bin);
  const child = spawn(binary, ['serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const lines = createInterface({ input: child.stdout });
  let timer;
  const base = await new Promise((resolve, reject) => {
    timer = setTimeout(() => { child.kill('SIGKILL'); reject(new HiccupError(`${binary} serve did not print its base URL within ${startTimeoutMs} ms; its stderr: ${stderr || '(empty)'}`)); }, startTimeoutMs);
    child.on('error', (e) => reject(new HiccupError(`${binary} serve did not start: ${e.message}`)));
    child.once('exit', (code) => reject(new HiccupError(`${binary} serve exited ${code} before printing its base URL; its stderr: ${stderr || '(empty)'}`)));
    lines.once('line', resolve);
  }).finally(() => clearTimeout(timer));
  // The rest of stdout is read and dropped, so a server that prints more never blocks.
  lines.on('line', () => {});
  return makeServer(base.trim(), child);
}

function makeServer(url, child) {
  return {
    url,
    process: child,
    health: () => call(url, 'GET', '/_hiccup/health'),
    /** A session playing `scenario` (a file path, or the scenario object); options as the control
     * API's create body: id, max_attempts, strict, recovery ('hold' | 'continue'), journal_window. */
    async createSession(scenario, options = {}) {
      try {
        const { session } = await call(url, 'POST', '/_hiccup/sessions', { scenario: scenarioBody(scenario), ...options });
        return new Session(url, session);
      } catch (e) {
        if (e instanceof HiccupError && typeof scenario === 'string') e.message = `${scenario}: ${e.message}`;
        throw e;
      }
    },
    /** Stops a server startHiccup started (SIGTERM); resolves to its exit code or signal. */
    stop() {
      return new Promise((resolve) => {
        if (!child || child.exitCode !== null || child.signalCode !== null) return resolve(child?.exitCode ?? null);
        child.once('exit', (code, signal) => resolve(code ?? signal));
        child.kill('SIGTERM');
      });
    },
  };
}

/** Wires hiccup into a test file: the server starts in beforeAll and stops in afterAll; sessions
 * made with `hiccup.session(scenario, options)` in a test are judged in afterEach (a verdict that
 * does not pass fails the test with the violations) and deleted. Pass the hooks (vitest:
 * `import { beforeAll, afterAll, afterEach } from 'vitest'`), or leave them to the globals (Jest,
 * vitest with globals: true). */
export function useHiccup({ beforeAll = globalThis.beforeAll, afterAll = globalThis.afterAll,
  afterEach = globalThis.afterEach, ...startOptions } = {}) {
  if (!beforeAll || !afterAll || !afterEach) {
    throw new HiccupError('useHiccup needs beforeAll, afterAll and afterEach: pass them, e.g. useHiccup({ beforeAll, afterAll, afterEach }) with vitest\'s');
  }
  let server = null;
  let made = [];
  const hiccup = {
    get server() { return server; },
    async session(scenario, options) {
      if (!server) throw new HiccupError('hiccup serve is not running: hiccup.session() belongs in a test, after beforeAll');
      const s = await server.createSession(scenario, options);
      made.push(s);
      return s;
    },
  };
  beforeAll(async () => { server = await startHiccup(startOptions); });
  afterAll(async () => { await server?.stop(); });
  afterEach(async () => {
    const sessions = made;
    made = [];
    try {
      for (const s of sessions) if (s.checkVerdict) await s.check();
    } finally {
      await Promise.all(sessions.map((s) => s.delete().catch(() => {})));
    }
  });
  return hiccup;
}
