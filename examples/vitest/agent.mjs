// A small agent loop on the official openai SDK (Chat Completions, streaming): stream a turn,
// collect its tool calls, run them once the turn finished, send their results, retry a broken
// stream. `retryBug: true` switches on a classic defect: on a broken stream it runs the calls
// received so far and keeps their results for the retry.
export class AgentFailed extends Error {}

export async function runAgent(OpenAI, { baseURL, prompt, tools, maxAttempts = 4, retryBug = false }) {
  const client = new OpenAI({ apiKey: 'hiccup', baseURL: baseURL + '/v1', maxRetries: 0 });
  const messages = [{ role: 'user', content: prompt }];
  let kept = [];
  for (let turn = 0; turn < 10; turn++) {
    let answer;
    for (let attempt = 0; !answer; attempt++) {
      const calls = [];
      let text = '';
      let finish = null;
      try {
        const stream = await client.chat.completions.create({
          model: 'gpt-4o', messages, stream: true,
          tools: [{ type: 'function', function: { name: 'deploy', parameters: { type: 'object', properties: { env: { type: 'string' } } } } }],
        });
        for await (const chunk of stream) {
          for (const choice of chunk.choices) {
            text += choice.delta?.content ?? '';
            for (const tc of choice.delta?.tool_calls ?? []) {
              const c = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
              c.id = tc.id ?? c.id;
              c.name += tc.function?.name ?? '';
              c.arguments += tc.function?.arguments ?? '';
            }
            finish = choice.finish_reason ?? finish;
          }
        }
        if (!finish) throw new Error('stream ended without its finish');
        answer = { text, calls };
      } catch (e) {
        if (e instanceof OpenAI.APIError && e.status && e.status < 500 && e.status !== 429) throw new AgentFailed(e.message);
        if (retryBug) for (const c of calls) kept.push(await runTool(tools, c));
        if (attempt === maxAttempts - 1) throw new AgentFailed(`retries exhausted: ${e.message}`);
      }
    }
    if (answer.calls.length === 0) return answer.text;
    messages.push({
      role: 'assistant', content: answer.text || null,
      tool_calls: answer.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    for (const c of answer.calls) kept.push(await runTool(tools, c));
    messages.push(...kept);
    kept = [];
  }
  throw new AgentFailed('too many turns');
}

async function runTool(tools, call) {
  const content = await tools[call.name](call.id, JSON.parse(call.arguments || '{}'));
  return { role: 'tool', tool_call_id: call.id, content };
}
