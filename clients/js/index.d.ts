// Types of @hiccup/test-helper (index.js); the shapes are docs/CONTROL-API.md's, version 1.
import type { ChildProcess } from 'node:child_process';

/** A scenario: a path to a scenario file (its text is sent, `//` comments allowed) or the object. */
export type Scenario = string | URL | Record<string, unknown>;

export interface SessionOptions {
  id?: string;
  max_attempts?: number;
  strict?: boolean;
  /** The recovery design the client follows; a run that shows the other fails recovery-design. */
  recovery?: 'hold' | 'continue';
  journal_window?: number;
  journal_file?: boolean;
}

export interface SessionInfo {
  id: string;
  path: string;
  base_url: string;
  scenario: string;
  provider: string;
  max_attempts: number;
  strict: boolean;
  recovery: 'hold' | 'continue' | null;
  journal_window: number;
  journal_file: string | null;
  requests: number;
  executions: number;
  outcome: Outcome | null;
}

export interface Outcome {
  outcome: 'completed' | 'failed';
  final_text?: string;
  shown_text?: string;
}

export interface Violation {
  invariant: string;
  message: string;
  /** The journal index of the request that shows it. */
  request?: number;
  turn?: number;
  attempt?: number;
}

export interface Verdict {
  version: 1;
  session: string;
  scenario: string;
  verdict: 'pass' | 'fail' | 'difference' | 'unknown';
  passed: boolean;
  strict: boolean;
  max_attempts: number;
  outcome: Outcome | null;
  requests: number;
  executions: number;
  /** In hiccup's order: the harm first, its consequences after. */
  violations: Violation[];
  differences: Violation[];
  checked: string[];
  recovery: 'hold' | 'continue' | null;
  design: 'hold' | 'continue' | 'mixed' | null;
  design_evidence?: string;
  not_applicable: { name: string; reason: string }[];
  window?: { journal_window: number; requests_evicted: number; executions_evicted: number; message: string };
}

export class HiccupError extends Error {
  status: number;
  code: string;
  problems: { pointer: string; message: string }[];
}

/** Thrown by assertVerdict and Session.check: `actual` and `expected` are the names of the invariants
 * violated and of those wanted (vitest shows their diff). */
export class VerdictError extends Error {
  verdict: Verdict;
  actual: string[];
  expected: string[];
  showDiff: true;
}

export class Session {
  readonly id: string;
  readonly baseURL: string;
  info: SessionInfo;
  /** OpenAI SDKs: `baseURL + '/v1'`. */
  readonly openaiBaseURL: string;
  readonly anthropicBaseURL: string;
  readonly geminiBaseURL: string;
  readonly baseURLs: { openai: string; anthropic: string; gemini: string };
  /** Whether useHiccup's afterEach judges this session. */
  checkVerdict: boolean;
  expectedViolations: string[] | null;
  recordExecution(name: string, args?: Record<string, unknown>, callId?: string): Promise<void>;
  recordOutcome(outcome: 'completed' | 'failed', finalText?: string, shownText?: string): Promise<void>;
  completed(finalText?: string, shownText?: string): Promise<void>;
  failed(shownText?: string): Promise<void>;
  verdict(): Promise<Verdict>;
  journal(): Promise<Record<string, unknown>[]>;
  executions(): Promise<{ name: string; args: Record<string, unknown>; call_id?: string; journal_size: number }[]>;
  reset(): Promise<void>;
  delete(): Promise<void>;
  expectViolations(...invariants: string[]): void;
  check(): Promise<void>;
}

export interface HiccupServer {
  url: string;
  /** The `hiccup serve` process startHiccup started; null for a server given by URL. */
  process: ChildProcess | null;
  health(): Promise<{ version: 1; ok: boolean; sessions: number; internal_errors: number }>;
  createSession(scenario: Scenario, options?: SessionOptions): Promise<Session>;
  stop(): Promise<number | string | null>;
}

export interface StartOptions {
  /** The hiccup binary (default $HICCUP_BIN, else hiccup on PATH). */
  bin?: string;
  /** More arguments of `hiccup serve`. */
  args?: string[];
  /** Use the server running there (default $HICCUP_URL) instead of starting one. */
  url?: string;
  startTimeoutMs?: number;
}

type Hook = (fn: () => Promise<void> | void, timeout?: number) => void;

export interface HiccupFixture {
  readonly server: HiccupServer | null;
  session(scenario: Scenario, options?: SessionOptions): Promise<Session>;
}

export function findBinary(bin?: string): string;
export function startHiccup(options?: StartOptions): Promise<HiccupServer>;
export function formatVerdict(verdict: Verdict): string;
export function assertVerdict(verdict: Verdict, options?: { violations?: string[] }): void;
export function useHiccup(options?: StartOptions & { beforeAll?: Hook; afterAll?: Hook; afterEach?: Hook }): HiccupFixture;
