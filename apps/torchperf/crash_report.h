// A fatal signal in torchperf itself (not in a worker: the supervisor reports those as data)
// writes one line naming the signal and a backtrace to stderr, then dies of the same signal, so
// the exit status stays 128 + signal. The addresses resolve with addr2line on the same binary.
#pragma once

namespace torchperf::cli {

// Installs the reporter for SIGSEGV, SIGBUS, SIGILL and SIGFPE (not under a sanitizer, which
// reports them itself).
void install_crash_report();

}  // namespace torchperf::cli
