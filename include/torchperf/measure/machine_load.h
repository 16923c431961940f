// What other work takes of the machine's cores while torchperf measures: the machine's busy CPU
// time (/proc/stat) less the CPU time of torchperf's own process tree, read between two moments.
// tune samples it so that a busy run is said, not reported as a finding.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace torchperf {

// CPU seconds at one moment: the machine's busy and total time summed over its CPUs, and the time
// torchperf's process tree has used (this process, its living descendants, the children waited).
struct CpuTimes {
  double busy_s = 0, total_s = 0, ours_s = 0;
  int cpus = 0;  // the CPUs /proc/stat sums over
};

// Read from /proc; nullopt where it cannot be read (not Linux).
std::optional<CpuTimes> read_cpu_times();

// The cores other work kept busy between two readings, on average (>= 0).
double others_cores(const CpuTimes& before, const CpuTimes& after);

// Other work of at least this many cores makes a machine, or a window of rounds, busy.
inline constexpr double kBusyCores = 0.5;

// Other work in the windows of a paired run (a head-to-head), each a few rounds long: one whose
// windows saw a busy machine in some and a quiet one in others mixes two regimes (a side at two
// threads loses more to a neighbour than one at one thread), and tune measures it again.
struct RoundLoad {
  std::size_t windows = 0;       // windows with a reading
  std::size_t busy_windows = 0;  // those in which other work took half a core or more
  double max_cores = 0;
  // Both regimes, the rarer in at least a quarter of three or more windows.
  bool varied() const;
};
RoundLoad round_load(const std::vector<double>& others_cores);

// Samples taken over a run: the interval before the sweep, then each interval during it.
class MachineLoad {
 public:
  // Starts an interval (the first call) or ends one and starts the next.
  void sample();
  // Marks the interval ended by the next sample() as the one before the sweep.
  void before_sweep_ends_here() { before_next_ = true; }

  std::optional<double> before() const { return before_; }
  const std::vector<double>& during() const { return during_; }
  double during_median() const;
  double during_max() const;
  // Other work took at least half a core before or (at the median) during the sweep.
  bool busy() const;
  // Whole cores other work leaves free of `usable` (at least 1).
  int free_cores(int usable) const;

  // For tests: intervals fed directly.
  void add(double cores, bool before_sweep);

 private:
  std::optional<CpuTimes> last_;
  std::optional<double> before_;
  std::vector<double> during_;
  bool before_next_ = false;
};

}  // namespace torchperf
