// Tests of the shared retry policy: classes, budget, backoff, Retry-After, fallback.
#include "runtime_under_test/retry_coordinator.h"

#include <catch2/catch.hpp>

namespace rut {

namespace {
AttemptResult failed(ErrorCode code, double retry_after_s = 0) {
  AttemptResult r;
  r.error = code;
  r.retry_after_s = retry_after_s;
  return r;
}
}  // namespace

TEST_CASE("backoff steps follow the schedule and repeat the last step") {
  std::vector<double> s = {10, 20, 60};
  CHECK(RetryCoordinator::backoff_step_s(s, 1) == 10);
  CHECK(RetryCoordinator::backoff_step_s(s, 2) == 20);
  CHECK(RetryCoordinator::backoff_step_s(s, 3) == 60);
  CHECK(RetryCoordinator::backoff_step_s(s, 7) == 60);
  CHECK(RetryCoordinator::backoff_step_s({}, 1) == 0);
}

TEST_CASE("retryable failures retry within max_attempts then exhaust") {
  Config c;
  c.max_attempts = 3;
  RetryCoordinator rc(c);
  auto d1 = rc.on_failure(failed(ErrorCode::kConnectionLost));
  CHECK(d1.retry);
  CHECK(d1.wait_s == 10);
  CHECK(rc.attempt() == 1);
  auto d2 = rc.on_failure(failed(ErrorCode::kHttp5xx));
  CHECK(d2.wait_s == 20);
  auto d3 = rc.on_failure(failed(ErrorCode::kIdleTimeout));
  CHECK_FALSE(d3.retry);
  CHECK(d3.run_error == "retries_exhausted");
  rc.start_turn();
  CHECK(rc.attempt() == 0);
  CHECK(rc.on_failure(failed(ErrorCode::kStreamError)).retry);
}

TEST_CASE("every retryable error code is retried and the others stop the run") {
  for (ErrorCode code : {ErrorCode::kHttp429, ErrorCode::kHttp5xx, ErrorCode::kConnectionLost,
                         ErrorCode::kConnectFailed, ErrorCode::kIdleTimeout,
                         ErrorCode::kStreamError, ErrorCode::kUndecodableFrame,
                         ErrorCode::kIncompleteStream, ErrorCode::kMalformedCall}) {
    Config c;
    RetryCoordinator rc(c);
    CHECK(rc.on_failure(failed(code)).retry);
  }
  Config c;
  RetryCoordinator rc(c);
  CHECK(rc.on_failure(failed(ErrorCode::kInvalidRequest)).run_error == "invalid_request");
  CHECK(rc.on_failure(failed(ErrorCode::kHttpClientError)).run_error == "non_retryable");
  CHECK(rc.on_failure(failed(ErrorCode::kContentFilter)).run_error == "content_filter");
}

TEST_CASE("a wait honours Retry-After when it exceeds the step") {
  Config c;
  RetryCoordinator rc(c);
  CHECK(rc.on_failure(failed(ErrorCode::kHttp429, 30)).wait_s == 30);
  CHECK(rc.on_failure(failed(ErrorCode::kHttp429, 5)).wait_s == 20);
}

TEST_CASE("content filter falls back once, immediately, then fails") {
  Config c;
  c.fallback_model = "fb";
  RetryCoordinator rc(c);
  auto d = rc.on_failure(failed(ErrorCode::kContentFilter));
  CHECK(d.retry);
  CHECK(d.wait_s == 0);
  CHECK(d.model == "fb");
  CHECK(rc.model() == "fb");
  auto d2 = rc.on_failure(failed(ErrorCode::kHttp5xx));
  CHECK(d2.model == "fb");
  CHECK(d2.wait_s == 20);  // retry n = 2: the fallback was retry 1
  CHECK(rc.on_failure(failed(ErrorCode::kContentFilter)).run_error == "content_filter");
  rc.start_turn();
  CHECK(rc.model() == c.model);
}

TEST_CASE("content filter fallback needs budget") {
  Config c;
  c.fallback_model = "fb";
  c.max_attempts = 1;
  RetryCoordinator rc(c);
  auto d = rc.on_failure(failed(ErrorCode::kContentFilter));
  CHECK_FALSE(d.retry);
  CHECK(d.run_error == "content_filter");
}

TEST_CASE("defect ignore-retry-after waits the schedule step only") {
  Config c;
  c.defects = {Defect::kIgnoreRetryAfter};
  RetryCoordinator rc(c);
  CHECK(rc.on_failure(failed(ErrorCode::kHttp429, 30)).wait_s == 10);
}

TEST_CASE("defect unbounded-retry ignores max_attempts") {
  Config c;
  c.max_attempts = 2;
  c.defects = {Defect::kUnboundedRetry};
  RetryCoordinator rc(c);
  for (int i = 0; i < 10; ++i) CHECK(rc.on_failure(failed(ErrorCode::kHttp5xx)).retry);
}

TEST_CASE("defect retry-non-retryable retries 400 and 404") {
  Config c;
  c.defects = {Defect::kRetryNonRetryable};
  RetryCoordinator rc(c);
  CHECK(rc.on_failure(failed(ErrorCode::kInvalidRequest)).retry);
  CHECK(rc.on_failure(failed(ErrorCode::kHttpClientError)).retry);
}

}  // namespace rut
