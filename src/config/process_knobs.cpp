#include "process_knobs.h"

#include <ATen/Parallel.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

// Debian's multiarch library folder; TORCHPERF_LIBDIR replaces it (another layout, or tests).
std::string library_dir() {
  if (const char* dir = std::getenv("TORCHPERF_LIBDIR"); dir && *dir) return dir;
#if defined(__x86_64__)
  return "/usr/lib/x86_64-linux-gnu";
#elif defined(__aarch64__)
  return "/usr/lib/aarch64-linux-gnu";
#else
  return "/usr/lib";
#endif
}

struct Provider {
  const char* value;
  const char* file;  // under library_dir()
  const char* package;
};

// The allocators a worker can preload (Debian packages).
const std::vector<Provider>& allocators() {
  static const std::vector<Provider> list = {
      {"jemalloc", "libjemalloc.so.2", "libjemalloc2"},
      {"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"},
      {"mimalloc", "libmimalloc.so.2", "libmimalloc2.0"}};
  return list;
}

const Provider* find_provider(const std::vector<Provider>& list, const std::string& value) {
  for (const auto& p : list)
    if (value == p.value) return &p;
  return nullptr;
}

Applicability installed(const Provider* p) {
  if (!p) return Applicability::yes();
  const std::string path = library_dir() + "/" + p->file;
  if (fs::exists(path)) return Applicability::yes();
  return Applicability::no(path + " is not installed (Debian package " + p->package +
                           "; scripts/install-deps.sh installs it)");
}

// A preloaded allocator in a worker: installed, and a torchperf without AddressSanitizer (whose
// runtime replaces malloc and must come first in the process, so it refuses a preloaded one).
Applicability preloadable(const Provider* p) {
  const Applicability a = installed(p);
  if (!a.applies || !p) return a;
#if defined(__SANITIZE_ADDRESS__)
  return Applicability::no(
      "this torchperf is built with AddressSanitizer, which replaces malloc itself");
#else
  return a;
#endif
}

// The shared objects mapped into this process.
std::vector<std::string> mapped_files() {
  std::ifstream in("/proc/self/maps");
  std::vector<std::string> files;
  for (std::string line; std::getline(in, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (files.empty() || files.back() != path) files.push_back(path);
  }
  return files;
}

std::string mapped_matching(const std::string& name_prefix) {
  for (const auto& f : mapped_files())
    if (fs::path(f).filename().string().rfind(name_prefix, 0) == 0) return f;
  return "";
}

// What the dynamic loader said about LD_PRELOAD: it writes to the worker's stderr, which is the
// worker's log file, before main() runs.
std::string loader_complaint() {
  std::error_code ec;
  const fs::path err = fs::read_symlink("/proc/self/fd/2", ec);
  if (ec || !fs::is_regular_file(err, ec)) return "";
  std::ifstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.find("LD_PRELOAD") != std::string::npos) return line;
  return "";
}

std::string getenv_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

Knob worker_knob(const std::string& name, const std::string& description) {
  Knob k;
  k.name = name;
  k.description = description;
  k.scope = KnobScope::kWorker;
  k.swept_by_default = never_swept;
  k.listed_at_baseline = false;
  return k;
}

// glibc's malloc with mmap and trim thresholds raised, so that large tensors freed in one call are
// reused in the next instead of being unmapped and faulted in again. 32 MiB is the most glibc
// accepts for the mmap threshold on 64-bit systems, so a larger activation (MobileNetV2's 77 MB
// at batch 16) was still mapped and faulted in afresh each call: MALLOC_MMAP_MAX_=0 serves every
// size from the heap (18,800 faults per call to 0, 1.45x, docs/benchmarks.md section 24).
const std::map<std::string, std::string> kTunedGlibc = {{"MALLOC_MMAP_THRESHOLD_", "33554432"},
                                                        {"MALLOC_MMAP_MAX_", "0"},
                                                        {"MALLOC_TRIM_THRESHOLD_", "1073741824"},
                                                        {"MALLOC_TOP_PAD_", "67108864"}};

Knob allocator_knob() {
  Knob k = worker_knob("allocator",
                       "the memory allocator of the process: glibc as is, glibc-tuned (MALLOC_* "
                       "thresholds raised, no mmap), or jemalloc, tcmalloc, mimalloc loaded with "
                       "LD_PRELOAD");
  k.values = [](const WorkloadTraits&) {
    return fixed({"glibc", "glibc-tuned", "jemalloc", "tcmalloc", "mimalloc"});
  };
  k.baseline = [](const WorkloadTraits&) { return "glibc"; };
  k.applies = [](const WorkloadTraits&, const std::string& value) {
    return preloadable(find_provider(allocators(), value));
  };
  k.environment = [](const std::string& value) {
    std::map<std::string, std::string> env;
    if (value == "glibc-tuned") env = kTunedGlibc;
    if (const Provider* p = find_provider(allocators(), value)) {
      const std::string lib = library_dir() + "/" + p->file;
      const std::string inherited = getenv_or("LD_PRELOAD", "");
      env["LD_PRELOAD"] = inherited.empty() ? lib : lib + ":" + inherited;
    }
    return env;
  };
  k.confirm = [](const std::string& value) -> std::string {
    if (const Provider* p = find_provider(allocators(), value)) {
      const std::string prefix = fs::path(p->file).filename().string().substr(
          0, fs::path(p->file).filename().string().find(".so") + 3);
      const std::string loaded = mapped_matching(prefix);
      if (loaded.empty()) {
        const std::string said = loader_complaint();
        throw ConfigError("allocator=" + value + ": " + p->file + " is not loaded in the worker" +
                          (said.empty() ? "" : " (the loader said: " + said + ")"));
      }
      return value + " (" + loaded + ")";
    }
    for (const auto& other : allocators()) {
      const std::string f = fs::path(other.file).filename().string();
      const std::string loaded = mapped_matching(f.substr(0, f.find(".so") + 3));
      if (!loaded.empty())
        throw ConfigError("allocator=" + value + ": " + loaded +
                          " is loaded (LD_PRELOAD from the environment): unset it to measure glibc");
    }
    if (value == "glibc-tuned")
      for (const auto& [var, expected] : kTunedGlibc)
        if (getenv_or(var.c_str(), "") != expected)
          throw ConfigError("allocator=glibc-tuned: the worker sees " + var + "=" +
                            getenv_or(var.c_str(), "(unset)") + ", expected " + expected);
    return value == "glibc-tuned" ? "glibc-tuned (MALLOC_MMAP_THRESHOLD_=32MiB, MALLOC_MMAP_MAX_=0, "
                                    "MALLOC_TRIM_THRESHOLD_=1GiB, MALLOC_TOP_PAD_=64MiB)"
                                  : "glibc";
  };
  k.code = [](const std::string& value, bool) {
    KnobCode c;
    if (value == "glibc-tuned")
      for (const auto& [var, v] : kTunedGlibc) c.environment.push_back(var + "=" + v);
    if (const Provider* p = find_provider(allocators(), value))
      c.environment.push_back("LD_PRELOAD=" + library_dir() + "/" + p->file);
    return c;
  };
  return k;
}

// A setting read from the environment when a library starts (OpenMP, oneDNN, MKL, ATen), chosen
// per worker: "default" leaves the environment as it is. `applies` says which values this machine
// can take (an ISA the CPU lacks is not applicable, with the reason).
using ValueCheck = std::function<Applicability(const std::string& value)>;
Knob environment_knob(const std::string& name, const std::string& description,
                      std::map<std::string, std::map<std::string, std::string>> settings,
                      ValueCheck check = nullptr) {
  Knob k = worker_knob(name, description);
  std::vector<std::string> values = {"default"};
  for (const auto& [value, env] : settings) values.push_back(value);
  k.values = [values](const WorkloadTraits&) { return values; };
  k.baseline = [](const WorkloadTraits&) { return "default"; };
  k.applies = [check](const WorkloadTraits&, const std::string& value) {
    return check && value != "default" ? check(value) : Applicability::yes();
  };
  k.environment = [settings](const std::string& value) {
    const auto it = settings.find(value);
    return it == settings.end() ? std::map<std::string, std::string>{} : it->second;
  };
  k.confirm = [settings, name](const std::string& value) -> std::string {
    std::string seen;
    const auto it = settings.find(value);
    if (it == settings.end()) {
      for (const auto& [v, env] : settings)
        for (const auto& [var, x] : env)
          if (seen.find(var + "=") == std::string::npos)
            seen += (seen.empty() ? "" : " ") + var + "=" + getenv_or(var.c_str(), "(unset)");
      return "default (" + seen + ")";
    }
    for (const auto& [var, expected] : it->second) {
      const std::string got = getenv_or(var.c_str(), "(unset)");
      if (got != expected)
        throw ConfigError(name + "=" + value + ": the worker sees " + var + "=" + got +
                          ", expected " + expected);
      seen += (seen.empty() ? "" : " ") + var + "=" + got;
    }
    return value + " (" + seen + ")";
  };
  k.code = [settings](const std::string& value, bool) {
    KnobCode c;
    const auto it = settings.find(value);
    if (it != settings.end())
      for (const auto& [var, v] : it->second) c.environment.push_back(var + "=" + v);
    return c;
  };
  return k;
}

// Whether this CPU has every flag a value needs (/proc/cpuinfo's names).
ValueCheck needs_cpu_flags(std::map<std::string, std::vector<std::string>> flags_by_value) {
  return [flags_by_value](const std::string& value) {
    const auto it = flags_by_value.find(value);
    if (it == flags_by_value.end()) return Applicability::yes();
    const std::vector<std::string> have = cpu_isa_flags();
    for (const auto& f : it->second)
      if (std::find(have.begin(), have.end(), f) == have.end())
        return Applicability::no("this CPU has no " + f);
    return Applicability::yes();
  };
}

// ATen's own vectorized kernels (element-wise, reductions, softmax ...) are compiled once per
// ISA and one is picked at start-up; ATEN_CPU_CAPABILITY caps it. Confirmed from LibTorch's own
// description of itself, not from the variable.
Knob aten_isa_knob() {
  Knob k = environment_knob(
      "aten_isa",
      "the ISA of ATen's own vectorized kernels (ATEN_CPU_CAPABILITY): the widest this CPU has, "
      "or capped at avx2 or none (element-wise, reductions; oneDNN and MKL choose their own)",
      {{"avx2", {{"ATEN_CPU_CAPABILITY", "avx2"}}},
       {"avx512", {{"ATEN_CPU_CAPABILITY", "avx512"}}},
       {"none", {{"ATEN_CPU_CAPABILITY", "default"}}}},
      needs_cpu_flags({{"avx2", {"avx2", "fma"}},
                       {"avx512", {"avx512f", "avx512bw", "avx512vl", "avx512dq"}}}));
  const auto by_variable = k.confirm;
  k.confirm = [by_variable](const std::string& value) -> std::string {
    const std::string seen = by_variable(value);
    const std::string in_use = parse_torch_build(compat::torch_build_config()).cpu_capability;
    const std::string wanted = value == "none" ? "DEFAULT" : value == "avx2" ? "AVX2" : "AVX512";
    if (value != "default" && in_use != wanted)
      throw ConfigError("aten_isa=" + value + ": LibTorch uses " + in_use + " kernels, not " +
                        wanted);
    return seen + ", ATen " + in_use;
  };
  return k;
}

// MKL_ENABLE_INSTRUCTIONS caps the code paths MKL dispatches to on Intel CPUs. On others MKL takes
// its own (AVX2) paths whatever the variable says: measured on an AMD EPYC with AVX-512, neither
// value changed MLP, ResNet-18 or encoder speed beyond the spread of two pairs of processes
// (docs/benchmarks.md, section 12), so there the knob is not applicable rather than a no-op.
Knob mkl_isa_knob() {
  Knob k = environment_knob(
      "mkl_isa",
      "the instructions MKL may use for matmul and Linear (MKL_ENABLE_INSTRUCTIONS): its own "
      "choice for this CPU, or AVX2, or AVX-512; Intel CPUs only",
      {{"avx2", {{"MKL_ENABLE_INSTRUCTIONS", "AVX2"}}},
       {"avx512", {{"MKL_ENABLE_INSTRUCTIONS", "AVX512"}}}},
      needs_cpu_flags({{"avx2", {"avx2"}}, {"avx512", {"avx512f", "avx512bw"}}}));
  const auto by_flags = k.applies;
  k.applies = [by_flags](const WorkloadTraits& t, const std::string& value) {
    if (value != "default" && cpu_vendor() != "GenuineIntel")
      return Applicability::no(
          "MKL runs its own code paths on this " +
          (cpu_vendor().empty() ? std::string("CPU") : cpu_vendor() + " CPU") +
          " whatever MKL_ENABLE_INSTRUCTIONS says (measured: no effect on an AMD EPYC)");
    return by_flags(t, value);
  };
  return k;
}

Knob interop_threads_knob() {
  Knob k = worker_knob("interop_threads",
                       "inter-op threads (at::set_num_interop_threads): the pool that runs "
                       "independent operators of a TorchScript graph in parallel (fork/wait); "
                       "settable once, before any inter-op work, so per worker");
  k.integer_valued = true;
  k.values = [](const WorkloadTraits& t) {
    std::vector<std::string> v = {"1"};
    if (t.usable_cores > 1) v.push_back(std::to_string(t.usable_cores));
    return v;
  };
  k.baseline = [](const WorkloadTraits& t) { return std::to_string(t.default_interop_threads); };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    return at_most_four_per_core(t, value, "inter-op threads");
  };
  k.confirm = [](const std::string& value) -> std::string {
    const int wanted = std::stoi(value);
    if (static_cast<int>(at::get_num_interop_threads()) != wanted) {
      try {
        at::set_num_interop_threads(wanted);
      } catch (const std::exception&) {
        throw ConfigError("interop_threads=" + value +
                          ": inter-op work had already started in this process (a fresh worker "
                          "sets it first)");
      }
    }
    return std::to_string(at::get_num_interop_threads());
  };
  k.code = [](const std::string& value, bool) {
    KnobCode c;
    c.cpp_includes = {"<ATen/Parallel.h>"};
    c.cpp_setup = {"at::set_num_interop_threads(" + value + ");  // before any inter-op work"};
    c.python_setup = {"torch.set_num_interop_threads(" + value + ")  # before any inter-op work"};
    return c;
  };
  return k;
}

}  // namespace

std::vector<Knob> worker_knobs() {
  return {allocator_knob(),
          environment_knob("omp_wait",
                   "OpenMP's wait policy (OMP_WAIT_POLICY): idle threads spin (active) or sleep "
                   "(passive) between parallel regions",
                   {{"passive", {{"OMP_WAIT_POLICY", "PASSIVE"}}},
                    {"active", {{"OMP_WAIT_POLICY", "ACTIVE"}}}}),
          environment_knob("omp_bind",
                   "OpenMP thread binding (OMP_PROC_BIND with OMP_PLACES=cores): threads pinned "
                   "close together or spread over the cores",
                   {{"close", {{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}}},
                    {"spread", {{"OMP_PROC_BIND", "spread"}, {"OMP_PLACES", "cores"}}}}),
          aten_isa_knob(),
          environment_knob(
              "onednn_isa",
              "the widest ISA oneDNN may use for convolutions and other primitives "
              "(ONEDNN_MAX_CPU_ISA): all this CPU has, or capped at AVX2 or AVX-512",
              {{"avx2", {{"ONEDNN_MAX_CPU_ISA", "AVX2"}}},
               {"avx512", {{"ONEDNN_MAX_CPU_ISA", "AVX512_CORE"}}}},
              needs_cpu_flags({{"avx2", {"avx2"}}, {"avx512", {"avx512f", "avx512bw"}}})),
          mkl_isa_knob(),
          interop_threads_knob()};
}

}  // namespace torchperf
