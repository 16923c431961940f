#include "torchperf/serve/arrivals.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "torchperf/error.h"

namespace torchperf {

ArrivalProcess parse_arrival_process(const std::string& text) {
  if (text == "poisson") return ArrivalProcess::kPoisson;
  if (text == "constant") return ArrivalProcess::kConstant;
  throw UsageError("arrivals '" + text + "': expected poisson or constant");
}

std::string to_string(ArrivalProcess process) {
  return process == ArrivalProcess::kPoisson ? "poisson" : "constant";
}

std::vector<double> schedule_arrivals(const ArrivalPlan& plan) {
  if (!(std::isfinite(plan.rate_per_s) && plan.rate_per_s > 0))
    throw UsageError(
        fmt::format("rate {}: expected a positive number of requests a second", plan.rate_per_s));
  if (!(std::isfinite(plan.duration_s) && plan.duration_s > 0))
    throw UsageError(fmt::format("duration {} s: expected a positive time", plan.duration_s));
  const double expected = plan.rate_per_s * plan.duration_s;
  // Poisson counts exceed their mean by a few standard deviations at most.
  if (expected + 6 * std::sqrt(expected) > static_cast<double>(kMaxScheduledRequests))
    throw UsageError(fmt::format(
        "rate {}/s for {} s is about {:.0f} requests: more than the {} one run may schedule",
        plan.rate_per_s, plan.duration_s, expected, kMaxScheduledRequests));
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(expected * 1.1) + 16);
  if (plan.process == ArrivalProcess::kConstant) {
    for (std::size_t i = 0;; ++i) {
      const double t = static_cast<double>(i) / plan.rate_per_s;
      if (t >= plan.duration_s) break;
      times.push_back(t);
    }
    return times;
  }
  std::mt19937_64 rng(plan.seed);
  std::exponential_distribution<double> gap(plan.rate_per_s);
  for (double t = gap(rng); t < plan.duration_s; t += gap(rng)) times.push_back(t);
  return times;
}

}  // namespace torchperf
