// The shared retry policy (see retry_coordinator.h).
#include "runtime_under_test/retry_coordinator.h"

#include <algorithm>

namespace rut {

namespace {

enum class RetryClass { kRetryable, kInvalidRequest, kNonRetryable, kContentFilter, kQuotaExhausted };

RetryClass classify(ErrorCode code, const DefectSet& defects) {
  switch (code) {
    case ErrorCode::kInvalidRequest:
    case ErrorCode::kHttpClientError:
      if (defects.contains(Defect::kRetryNonRetryable)) return RetryClass::kRetryable;
      return code == ErrorCode::kInvalidRequest ? RetryClass::kInvalidRequest
                                                : RetryClass::kNonRetryable;
    case ErrorCode::kContentFilter:
      return RetryClass::kContentFilter;
    case ErrorCode::kQuotaExhausted:
      return RetryClass::kQuotaExhausted;  // resets only the next day: no wait in the run helps
    case ErrorCode::kHttp429:
    case ErrorCode::kHttp5xx:
    case ErrorCode::kStreamError:
      // defect: a failure the provider marks retryable is taken as final
      if (defects.contains(Defect::kGiveUpOnRetryable)) return RetryClass::kNonRetryable;
      return RetryClass::kRetryable;
    default:
      return RetryClass::kRetryable;
  }
}

}  // namespace

RetryCoordinator::RetryCoordinator(const Config& config) : config_(config) { start_turn(); }

void RetryCoordinator::start_turn() {
  model_ = config_.model;
  attempt_ = 0;
  used_fallback_ = false;
}

double RetryCoordinator::backoff_step_s(const std::vector<double>& backoff_s, int n) {
  if (backoff_s.empty() || n < 1) return 0;
  std::size_t index = std::min<std::size_t>(static_cast<std::size_t>(n - 1), backoff_s.size() - 1);
  return backoff_s[index];
}

double RetryCoordinator::continuation_wait_s(const AttemptResult& result) const {
  const double step = backoff_step_s(config_.backoff_s, attempt_ + 1);
  return std::max(step, result.retry_after_s);
}

bool RetryCoordinator::has_budget() const {
  if (config_.defects.contains(Defect::kUnboundedRetry)) return true;  // defect: no budget
  return attempt_ + 1 < config_.max_attempts;
}

RetryDecision RetryCoordinator::on_failure(const AttemptResult& result) {
  RetryDecision d;
  const ErrorCode code = result.error.value_or(ErrorCode::kIncompleteStream);
  switch (classify(code, config_.defects)) {
    case RetryClass::kInvalidRequest:
      d.run_error = "invalid_request";
      return d;
    case RetryClass::kNonRetryable:
      d.run_error = "non_retryable";
      return d;
    case RetryClass::kQuotaExhausted:
      d.run_error = "quota_exhausted";
      return d;
    case RetryClass::kContentFilter:
      // One immediate retry on the fallback model, if set, unused in this turn, and in budget.
      if (config_.fallback_model && !used_fallback_ && has_budget()) {
        used_fallback_ = true;
        model_ = *config_.fallback_model;
        ++attempt_;
        d.retry = true;
        d.wait_s = 0;
        d.model = model_;
        return d;
      }
      if (config_.defects.contains(Defect::kRetryContentFilterUnchanged)) break;  // defect: retry as is
      d.run_error = "content_filter";
      return d;
    case RetryClass::kRetryable:
      break;
  }
  if (!has_budget()) {
    d.run_error = "retries_exhausted";
    return d;
  }
  ++attempt_;
  const double step = backoff_step_s(config_.backoff_s, attempt_);
  d.retry = true;
  d.wait_s = config_.defects.contains(Defect::kIgnoreRetryAfter)
                 ? step
                 : std::max(step, result.retry_after_s);
  d.model = model_;
  return d;
}

}  // namespace rut
