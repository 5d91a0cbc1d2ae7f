// The one shared retry policy (docs/POLICY.md "Retries"): classifies a failed attempt, keeps the
// per-turn attempt budget, computes backoff waits (max(step, Retry-After)) and the content-filter
// fallback model. Pure: it never sleeps; the streaming turn does the waiting.
#pragma once

#include <string>

#include "runtime_under_test/model_client.h"
#include "runtime_under_test/runtime.h"

namespace rut {

/// What to do after a failed attempt.
struct RetryDecision {
  bool retry = false;
  double wait_s = 0;       ///< virtual seconds to wait before the next attempt (retry only)
  std::string model;       ///< model of the next attempt (retry only)
  std::string run_error;   ///< "retries_exhausted", "non_retryable", "content_filter",
                           ///< "invalid_request" (stop only)
};

/// Per-turn retry state. Call start_turn() before a turn's first attempt.
class RetryCoordinator {
 public:
  explicit RetryCoordinator(const Config& config);

  /// Resets the budget and returns to the configured model.
  void start_turn();
  /// Model for the current attempt.
  [[nodiscard]] const std::string& model() const { return model_; }
  /// 0-based index of the current attempt within the turn.
  [[nodiscard]] int attempt() const { return attempt_; }
  /// Decides after the current attempt failed with `result.error`; on retry, advances to the
  /// next attempt (attempt() + 1, model()).
  [[nodiscard]] RetryDecision on_failure(const AttemptResult& result);

  /// Under the continue design, the wait before the request that follows a kept cut turn (the next
  /// turn's first attempt): what a retry of the current attempt would wait,
  /// max(backoff step for the next attempt, Retry-After), whatever the budget left.
  [[nodiscard]] double continuation_wait_s(const AttemptResult& result) const;

  /// Backoff step before retry n (n >= 1 is the 0-based index of the next attempt):
  /// backoff_s[min(n-1, len-1)], 0 when the schedule is empty.
  [[nodiscard]] static double backoff_step_s(const std::vector<double>& backoff_s, int n);

 private:
  [[nodiscard]] bool has_budget() const;
  const Config& config_;
  std::string model_;
  int attempt_ = 0;
  bool used_fallback_ = false;
};

}  // namespace rut
