// When the load generator sends each request. Open-loop load is a schedule fixed before the run
// (Poisson or evenly spaced arrivals at a rate), and latency is measured from each request's
// scheduled time: a server that falls behind cannot hide its queue (no coordinated omission).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchperf {

enum class ArrivalProcess { kPoisson, kConstant };

// "poisson" or "constant"; UsageError otherwise.
ArrivalProcess parse_arrival_process(const std::string& text);
std::string to_string(ArrivalProcess process);

struct ArrivalPlan {
  ArrivalProcess process = ArrivalProcess::kPoisson;
  double rate_per_s = 0;
  double duration_s = 0;
  std::uint64_t seed = 0;  // the same seed, the same schedule
};

// The most requests one schedule holds: a bigger run is a mistake in the rate or duration.
constexpr std::size_t kMaxScheduledRequests = 10'000'000;

// Send times in seconds from the start, ascending, each before the duration. Poisson arrivals
// have exponential gaps of mean 1/rate; constant ones are 1/rate apart, the first at 0. Throws
// UsageError naming the plan when the rate or duration is not positive and finite, or when the
// schedule would exceed kMaxScheduledRequests.
std::vector<double> schedule_arrivals(const ArrivalPlan& plan);

}  // namespace torchperf
