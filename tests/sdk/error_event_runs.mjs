#!/usr/bin/env node
// The in-stream error measured through each official SDK (issue 12): an `error_event` right after
// a text event, streaming, N runs per provider (default 100), each against its own `hiccup serve`.
// Counts how many runs give the SDK's proper API error (genai ApiError, openai APIError,
// anthropic APIError; for Responses the APIError the SDK throws at the `error` event that comes
// before `response.failed`, as live) and how many a JSON/parse error instead, plus every distinct
// outcome string of conformance.mjs.
//
//   node tests/sdk/error_event_runs.mjs [--runs N] [--only PROVIDER[,PROVIDER]] [--status S]
//                                       [--concurrency K] [--json]
//
// --status overrides each provider's overload status (gemini/openai 503, anthropic 529);
// --concurrency runs K requests (each with its own server) at a time, to load the machine.
// HICCUP_BIN picks the binary (default build/hiccup).
import { PROVIDERS, runCell } from './conformance.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const runs = Number(opt('--runs', 100));
const only = opt('--only', PROVIDERS.join(',')).split(',');
const statusOverride = opt('--status', null);
const concurrency = Math.max(1, Number(opt('--concurrency', 1)));

// Each provider's usual overload status for its in-stream error.
const STATUS = { gemini: 503, 'openai-chat': 503, 'openai-responses': 503, anthropic: 529 };

function classify(outcome) {
  if (/^text "Hel", then throws (ApiError|APIError)\b/.test(outcome)) return 'proper API error';
  if (/^text "Hel", response\.failed\b/.test(outcome)) return 'proper API error';  // a failed event alone (hiccup before issue 41)
  if (/SyntaxError|Incomplete JSON|JSON/.test(outcome)) return 'JSON/parse error';
  if (/ends|returns/.test(outcome) && !/throws/.test(outcome)) return 'no error (silent end)';
  return 'other';
}

const report = {};
for (const provider of PROVIDERS.filter((p) => only.includes(p))) {
  const status = statusOverride ? Number(statusOverride) : STATUS[provider];
  const cell = { provider, mode: 'streaming', fault: `error_event ${status} (runs)`,
                 attempt: { events: [{ text: 'Hel' }, { text: 'lo' }, { finish: 'stop' }],
                            fault: { kind: 'error_event', after_event: 1, status } } };
  const byClass = {};
  const byOutcome = {};
  let started = 0;
  const worker = async () => {
    while (started < runs) {
      started++;
      const { outcome } = await runCell(cell);
      const c = classify(outcome);
      byClass[c] = (byClass[c] ?? 0) + 1;
      byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  report[provider] = { status, runs, byClass, byOutcome };
  process.stderr.write(`${provider} (error_event ${status} after a text event, ${runs} runs): ` +
                       Object.entries(byClass).map(([k, v]) => `${v} ${k}`).join(', ') + '\n');
}

if (argv.includes('--json')) {
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
} else {
  const lines = ['| provider (SDK) | in-stream error | runs | proper API error | JSON/parse error | other | outcome(s) |', '|---|---|---|---|---|---|---|'];
  const sdkOf = { gemini: '@google/genai', 'openai-chat': 'openai Chat', 'openai-responses': 'openai Responses', anthropic: '@anthropic-ai/sdk' };
  for (const [p, r] of Object.entries(report)) {
    const other = r.runs - (r.byClass['proper API error'] ?? 0) - (r.byClass['JSON/parse error'] ?? 0);
    const outcomes = Object.entries(r.byOutcome).map(([o, n]) => `${n}× ${o}`).join('; ').replace(/\|/g, '\\|');
    lines.push(`| ${p} (${sdkOf[p]}) | ${r.status} | ${r.runs} | ${r.byClass['proper API error'] ?? 0} | ${r.byClass['JSON/parse error'] ?? 0} | ${other} | ${outcomes} |`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}
