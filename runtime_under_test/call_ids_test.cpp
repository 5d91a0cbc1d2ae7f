// The conversation's call ids (docs/POLICY.md "Call ids"): calls kept apart by position, unique ids
// in history, a replay (the same id, name and arguments) recognised, and the collapse defect.
#include "runtime_under_test/call_ids.h"

#include <catch2/catch.hpp>

namespace rut::call_ids_test {

using nlohmann::json;

namespace {

FunctionCall call(std::string name, json args, std::optional<std::string> id) {
  return FunctionCall{std::move(name), std::move(args), std::move(id)};
}

const json kLs = {{"command", "ls"}};
const json kCat = {{"command", "cat README.md"}};

}  // namespace

TEST_CASE("call ids: an id sent twice in one answer gets a free one in history, and only a whole repeat is a replay") {
  CallIds ids;
  ids.begin_attempt();
  CHECK(ids.admit(call("shell", kLs, "c1"), {}).history_id == "c1");
  const AdmittedCall collision = ids.admit(call("shell", kCat, "c1"), {});
  CHECK(collision.history_id == "c1_dup1");
  CHECK_FALSE(collision.replay_of);
  const AdmittedCall replay = ids.admit(call("shell", kLs, "c1"), {});
  CHECK(replay.history_id == "c1_dup2");
  CHECK(replay.replay_of == "c1");
  // The provider's own id that equals one history gave is not reused either.
  CHECK(ids.admit(call("shell", kCat, "c1_dup1"), {}).history_id == "c1_dup1_dup1");
  CHECK(ids.attempt().size() == 4);
}

TEST_CASE("call ids: a failed attempt's ids are forgotten, a committed turn's are the conversation's") {
  CallIds ids;
  ids.begin_attempt();
  (void)ids.admit(call("shell", kLs, "c1"), {});
  ids.begin_attempt();  // the attempt failed: the retry may send c1 again, the same call asked for again
  CHECK(ids.admit(call("shell", kLs, "c1"), {}).history_id == "c1");
  ids.commit_attempt();
  ids.begin_attempt();
  const AdmittedCall later = ids.admit(call("shell", kLs, "c1"), {});  // a later turn replays it
  CHECK(later.history_id == "c1_dup1");
  CHECK(later.replay_of == "c1");
  const AdmittedCall reused = ids.admit(call("shell", kCat, "c1"), {});  // a gateway reuses the id
  CHECK(reused.history_id == "c1_dup2");
  CHECK_FALSE(reused.replay_of);
}

TEST_CASE("call ids: calls without an id (or with an empty one) get none in history and are never replays") {
  CallIds ids;
  ids.begin_attempt();
  CHECK_FALSE(ids.admit(call("shell", kLs, std::nullopt), {}).history_id);
  const AdmittedCall second = ids.admit(call("shell", kLs, std::nullopt), {});
  CHECK_FALSE(second.history_id);
  CHECK_FALSE(second.replay_of);
  const AdmittedCall empty = ids.admit(call("shell", kLs, ""), {});
  CHECK_FALSE(empty.history_id);
  CHECK_FALSE(empty.replay_of);
}

TEST_CASE("collapse-calls-by-id takes any call under a known id for a replay of it") {
  CallIds ids;
  ids.begin_attempt();
  (void)ids.admit(call("shell", kLs, "c1"), {Defect::kCollapseCallsById});
  const AdmittedCall collision = ids.admit(call("shell", kCat, "c1"), {Defect::kCollapseCallsById});
  CHECK(collision.replay_of == "c1");
  CHECK(collision.history_id == "c1_dup1");
}

}  // namespace rut::call_ids_test
