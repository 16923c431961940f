// How long this process has run, from the kernel's record of its start: what a server's time to
// ready is counted from (issue 62), so that the loader, the libraries' own start and a restart by
// exec (serve's worker knobs) are all inside it.
#pragma once

#include <string>

namespace torchperf {

// Seconds since this process started (its /proc/self/stat start time against /proc/uptime), to
// the kernel's clock tick (10 ms); NaN where /proc cannot be read.
double seconds_since_process_start();

// The same from the texts: a /proc/PID/stat line (its command name may hold spaces and
// parentheses), the system's uptime and clock ticks a second. NaN for a line it cannot read.
double process_age_from(const std::string& stat_line, double uptime_s, long ticks_per_s);

}  // namespace torchperf
