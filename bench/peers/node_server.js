// bench/peers.sh: Node's own http module answering every request with the stream in BODY_FILE,
// written as one res.write per SSE frame (6 writes), then res.end(). Usage: node node_server.js PORT BODY_FILE
'use strict';
const http = require('http');
const fs = require('fs');
const [port, bodyFile] = process.argv.slice(2);
const frames = fs.readFileSync(bodyFile, 'utf8').split(/(?<=\n\n)/).filter((f) => f.length > 0);
http
  .createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const f of frames) res.write(f);
      res.end();
    });
  })
  .listen(Number(port), '127.0.0.1', () => console.log('listening'));
