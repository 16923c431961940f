#include "torchperf/measure/machine_load.h"

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace torchperf {
namespace {

struct ProcessTimes {
  long ppid = 0;
  double cpu_s = 0;  // utime + stime + cutime + cstime
};

std::optional<ProcessTimes> read_process(const std::string& pid, double tick) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name sits in parentheses and may hold spaces: fields are read after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string state;
  long ppid = 0;
  rest >> state >> ppid;
  std::string skip;
  for (int field = 5; field <= 13; ++field) rest >> skip;
  double utime = 0, stime = 0, cutime = 0, cstime = 0;
  rest >> utime >> stime >> cutime >> cstime;
  if (!rest) return std::nullopt;
  return ProcessTimes{ppid, (utime + stime + cutime + cstime) / tick};
}

double our_tree_s(double tick) {
  std::map<long, ProcessTimes> all;
  if (DIR* dir = ::opendir("/proc")) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
      if (const auto p = read_process(name, tick)) all[std::stol(name)] = *p;
    }
    ::closedir(dir);
  }
  const long self = ::getpid();
  double total = 0;
  for (const auto& [pid, p] : all) {
    // Ours when self is among its ancestors (a chain a few links long).
    long at = pid;
    for (int depth = 0; depth < 64 && at > 1 && at != self; ++depth) {
      const auto it = all.find(at);
      at = it == all.end() ? 0 : it->second.ppid;
    }
    if (at == self) total += p.cpu_s;
  }
  return total;
}

}  // namespace

std::optional<CpuTimes> read_cpu_times() {
  std::ifstream in("/proc/stat");
  std::string line;
  CpuTimes t;
  bool found = false;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  while (std::getline(in, line)) {
    if (line.rfind("cpu ", 0) == 0) {
      std::istringstream fields(line.substr(4));
      double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
             steal = 0;
      fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
      t.busy_s = (user + nice + system + irq + softirq + steal) / tick;
      t.total_s = t.busy_s + (idle + iowait) / tick;
      found = true;
    } else if (line.rfind("cpu", 0) == 0) {
      ++t.cpus;
    }
  }
  if (!found || t.cpus == 0 || tick <= 0) return std::nullopt;
  t.ours_s = our_tree_s(tick);
  return t;
}

double others_cores(const CpuTimes& before, const CpuTimes& after) {
  const double wall = (after.total_s - before.total_s) / std::max(1, after.cpus);
  if (wall <= 0) return 0;
  const double others = (after.busy_s - before.busy_s) - (after.ours_s - before.ours_s);
  return std::max(0.0, others / wall);
}

bool RoundLoad::varied() const {
  const std::size_t quiet = windows - busy_windows;
  const std::size_t rarer = std::min(busy_windows, quiet);
  return windows >= 3 && rarer >= 1 && 4 * rarer >= windows;
}

RoundLoad round_load(const std::vector<double>& others_cores) {
  RoundLoad r;
  r.windows = others_cores.size();
  for (double c : others_cores) {
    r.busy_windows += c >= kBusyCores;
    r.max_cores = std::max(r.max_cores, c);
  }
  return r;
}

void MachineLoad::sample() {
  const auto now = read_cpu_times();
  if (!now) return;
  // Intervals shorter than a few clock ticks say nothing: the next sample extends them.
  if (last_ && (now->total_s - last_->total_s) / std::max(1, now->cpus) < 0.05) return;
  if (last_) add(others_cores(*last_, *now), before_next_);
  before_next_ = false;
  last_ = now;
}

void MachineLoad::add(double cores, bool before_sweep) {
  if (before_sweep)
    before_ = cores;
  else
    during_.push_back(cores);
}

double MachineLoad::during_median() const {
  if (during_.empty()) return 0;
  std::vector<double> sorted = during_;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double MachineLoad::during_max() const {
  return during_.empty() ? 0 : *std::max_element(during_.begin(), during_.end());
}

bool MachineLoad::busy() const {
  return before_.value_or(0) >= kBusyCores || during_median() >= kBusyCores;
}

int MachineLoad::free_cores(int usable) const {
  const double others = std::max(before_.value_or(0), during_median());
  return std::max(1, usable - static_cast<int>(std::lround(others)));
}

}  // namespace torchperf
