// The agent loop of agent.mjs against hiccup sessions, with @hiccup/test-helper (clients/js:
// `npm install ./clients/js`): a clean run passes; the retry bug is caught. Run by ctest (label
// examples, examples/CMakeLists.txt); `test` and the hooks are vitest globals (vitest.config.mjs).
//
// useHiccup() starts one `hiccup serve` for this file (hiccup on PATH, or HICCUP_BIN), and judges
// every session a test made when the test ends: a verdict that does not pass fails the test with
// hiccup's violations as the message.
import OpenAI from 'openai';
import { useHiccup } from '@hiccup/test-helper';

import { AgentFailed, runAgent } from './agent.mjs';

const scenario = new URL('../scenarios/deploy-disconnect-after-call.json', import.meta.url);
const hiccup = useHiccup();

async function play(session, retryBug) {
  const tools = {
    deploy: async (callId, args) => {
      await session.recordExecution('deploy', args, callId); // the side effect, in hiccup's ledger
      return `deployed ${args.env}`;
    },
  };
  try {
    await session.completed(await runAgent(OpenAI, { baseURL: session.baseURL, prompt: 'Deploy the staging build.', tools, retryBug }));
  } catch (e) {
    if (!(e instanceof AgentFailed)) throw e;
    await session.failed();
  }
}

test('the agent survives a disconnect after a call', async () => {
  const session = await hiccup.session(scenario);
  await play(session, false);
  expect((await session.verdict()).executions).toBe(1);
});

test('hiccup catches the retry bug', async () => {
  const session = await hiccup.session(scenario);
  // The helper then fails this test unless hiccup reports both (so ctest notices if it stops
  // catching the bug); without this line the verdict's violations would fail it.
  session.expectViolations('at-most-once', 'pairing');
  await play(session, true);
});
