// The search strategies behind make_search (search.h), one file each. Internal to sweep.
#pragma once

#include <memory>

#include "torchperf/sweep/search.h"

namespace torchperf {

std::unique_ptr<Search> make_exhaustive_search(const Space& space, const SearchOptions& options);
std::unique_ptr<Search> make_smart_search(const Space& space, const SearchOptions& options);

}  // namespace torchperf
