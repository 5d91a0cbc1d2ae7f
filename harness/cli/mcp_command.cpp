// `hiccup mcp URL`: the MCP stdio transport for clients that spawn their MCP servers, bridged to
// the Streamable HTTP endpoint of a running `hiccup serve` (mock/mcp/stdio_bridge.h), so a CLI
// configured with a command plays the same scripted tools, journal and counts as one that speaks
// HTTP.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "mock_server/mcp/stdio_bridge.h"

namespace harness::cli {
namespace {

constexpr const char* kMcpUsage = R"(usage: hiccup mcp URL [--read-timeout-s N]

The MCP stdio transport bridged to the MCP endpoint of a running `hiccup serve`: URL is that
endpoint, http://127.0.0.1:PORT/mcp for the default session or http://127.0.0.1:PORT/s/ID/mcp
for session ID. Reads newline-delimited JSON-RPC messages on stdin and POSTs each to URL (MCP
Streamable HTTP, with the Mcp-Session-Id initialize brought); writes every message the endpoint
answers to stdout, one per line (progress notifications as they come, then the response). The
session's scenario scripts each tools/call (docs/SCENARIO-FORMAT.md "tools"); it is journaled at
GET /_hiccup/sessions/ID/tool_calls as over HTTP. A lost reply writes nothing (a note on stderr);
a hung call writes nothing. Ends when stdin ends.

Configure it as a client's stdio MCP server, e.g. {"command": "hiccup", "args": ["mcp",
"http://127.0.0.1:PORT/s/ID/mcp"]}.

options:
  --read-timeout-s N    give up an answer silent this long (default 86400: a hung call outlives
                        any client's patience)
)";

}  // namespace

int mcp_command(const Args& args) {
  ArgReader in(args);
  std::string timeout_text = "86400";
  std::vector<std::string> positional;
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << kMcpUsage;
      return kExitPassed;
    }
    if (in.value("--read-timeout-s", timeout_text)) {
    } else if (in.peek().rfind("-", 0) == 0) in.set_error("unknown option \"" + in.take() + "\"");
    else positional.push_back(in.take());
  }
  const auto timeout = in.number("--read-timeout-s", timeout_text, 1, std::numeric_limits<int>::max(), "a whole number >= 1");
  if (positional.size() != 1 && in.error().empty()) in.set_error("expected one URL (the MCP endpoint of a hiccup serve session)");
  std::string url_error;
  std::optional<mock::mcp::Endpoint> endpoint;
  if (in.error().empty()) {
    endpoint = mock::mcp::parse_endpoint(positional.front(), url_error);
    if (!endpoint) in.set_error(url_error);
  }
  if (!in.error().empty()) return usage_error("mcp", in.error());
  mock::mcp::BridgeOptions options;
  options.read_timeout_s = static_cast<int>(*timeout);
  mock::mcp::StdioBridge bridge(*endpoint, options);
  bridge.run(std::cin, std::cout, std::cerr, /*wait=*/false);
  // stdin ended: the client shuts its server down (MCP stdio). Requests still in flight (a hung
  // call) are abandoned with the process.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(kExitPassed);
}

}  // namespace harness::cli
