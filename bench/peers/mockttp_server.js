// bench/peers.sh: mockttp (pinned in npm/package.json) answering every request with the stream in
// BODY_FILE. Usage: NODE_PATH=.cache/peers/node_modules node mockttp_server.js PORT BODY_FILE
'use strict';
const mockttp = require('mockttp');
const fs = require('fs');
const [port, bodyFile] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile, 'utf8');
(async () => {
  // Its best configuration for a fixed answer: no traffic recorded (MockttpOptions.recordTraffic,
  // default true: every request kept for getSeenRequests), debug off (the default).
  const server = mockttp.getLocal({ recordTraffic: false, debug: false });
  await server.start(Number(port));
  await server.forAnyRequest().thenReply(200, body, { 'content-type': 'text/event-stream' });
  console.log('listening');
})();
