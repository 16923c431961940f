#include "process_knobs.h"

#include <ATen/Parallel.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

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

// The providers of libblas.so.3 (Debian's alternatives), each in a folder of its own: a worker
// finds its choice first through LD_LIBRARY_PATH, and the system's alternative stays as it is.
const std::vector<Provider>& blas_providers() {
  static const std::vector<Provider> list = {
      {"reference", "blas/libblas.so.3", "libblas3"},
      {"openblas-openmp", "openblas-openmp/libblas.so.3", "libopenblas0-openmp"},
      {"openblas-pthread", "openblas-pthread/libblas.so.3", "libopenblas0-pthread"},
      {"blis-openmp", "blis-openmp/libblas.so.3", "libblis4-openmp"},
      {"blis-pthread", "blis-pthread/libblas.so.3", "libblis4-pthread"}};
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

std::vector<std::string> fixed(std::initializer_list<const char*> values) {
  return std::vector<std::string>(values.begin(), values.end());
}

Knob worker_knob(const std::string& name, const std::string& description) {
  Knob k;
  k.name = name;
  k.description = description;
  k.scope = KnobScope::kWorker;
  k.swept_by_default = false;
  k.listed_at_baseline = false;
  return k;
}

// glibc's malloc with mmap and trim thresholds raised, so that large tensors freed in one call are
// reused in the next instead of being unmapped and faulted in again. 32 MiB is the most glibc
// accepts for the mmap threshold on 64-bit systems.
const std::map<std::string, std::string> kTunedGlibc = {{"MALLOC_MMAP_THRESHOLD_", "33554432"},
                                                        {"MALLOC_TRIM_THRESHOLD_", "1073741824"},
                                                        {"MALLOC_TOP_PAD_", "67108864"}};

Knob allocator_knob() {
  Knob k = worker_knob("allocator",
                       "the memory allocator of the process: glibc as is, glibc-tuned (MALLOC_* "
                       "thresholds raised), or jemalloc, tcmalloc, mimalloc loaded with LD_PRELOAD");
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
    return value == "glibc-tuned" ? "glibc-tuned (MALLOC_MMAP_THRESHOLD_=32MiB, "
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

Knob blas_knob() {
  Knob k = worker_knob("blas",
                       "the libblas.so.3 LibTorch loads: the system's alternative, or a provider "
                       "chosen for the worker alone through LD_LIBRARY_PATH");
  k.values = [](const WorkloadTraits&) {
    return fixed(
        {"system", "reference", "openblas-openmp", "openblas-pthread", "blis-openmp", "blis-pthread"});
  };
  k.baseline = [](const WorkloadTraits&) { return "system"; };
  k.applies = [](const WorkloadTraits&, const std::string& value) {
    return installed(find_provider(blas_providers(), value));
  };
  k.environment = [](const std::string& value) {
    std::map<std::string, std::string> env;
    if (const Provider* p = find_provider(blas_providers(), value)) {
      const std::string dir = fs::path(library_dir() + "/" + p->file).parent_path().string();
      const std::string inherited = getenv_or("LD_LIBRARY_PATH", "");
      env["LD_LIBRARY_PATH"] = inherited.empty() ? dir : dir + ":" + inherited;
    }
    return env;
  };
  k.confirm = [](const std::string& value) -> std::string {
    const BlasLibrary loaded = detect_loaded_blas();
    const Provider* p = find_provider(blas_providers(), value);
    if (!p) return "system (" + to_string(loaded.kind) + ": " + loaded.path + ")";
    std::error_code ec;
    const std::string wanted =
        fs::canonical(library_dir() + "/" + p->file, ec).string();
    if (loaded.path.empty() || (!ec && loaded.path != wanted))
      throw ConfigError("blas=" + value + ": the worker loaded " +
                        (loaded.path.empty() ? std::string("no BLAS") : loaded.path) +
                        ", not " + wanted);
    return value + " (" + loaded.path + ")";
  };
  k.code = [](const std::string& value, bool) {
    KnobCode c;
    if (const Provider* p = find_provider(blas_providers(), value))
      c.environment.push_back("LD_LIBRARY_PATH=" +
                              fs::path(library_dir() + "/" + p->file).parent_path().string());
    return c;
  };
  return k;
}

// An OpenMP variable chosen per worker: "default" leaves the environment as it is.
Knob omp_knob(const std::string& name, const std::string& description,
              std::map<std::string, std::map<std::string, std::string>> settings) {
  Knob k = worker_knob(name, description);
  std::vector<std::string> values = {"default"};
  for (const auto& [value, env] : settings) values.push_back(value);
  k.values = [values](const WorkloadTraits&) { return values; };
  k.baseline = [](const WorkloadTraits&) { return "default"; };
  k.applies = [](const WorkloadTraits&, const std::string&) { return Applicability::yes(); };
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
  return {allocator_knob(), blas_knob(),
          omp_knob("omp_wait",
                   "OpenMP's wait policy (OMP_WAIT_POLICY): idle threads spin (active) or sleep "
                   "(passive) between parallel regions",
                   {{"passive", {{"OMP_WAIT_POLICY", "PASSIVE"}}},
                    {"active", {{"OMP_WAIT_POLICY", "ACTIVE"}}}}),
          omp_knob("omp_bind",
                   "OpenMP thread binding (OMP_PROC_BIND with OMP_PLACES=cores): threads pinned "
                   "close together or spread over the cores",
                   {{"close", {{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}}},
                    {"spread", {{"OMP_PROC_BIND", "spread"}, {"OMP_PLACES", "cores"}}}}),
          interop_threads_knob()};
}

}  // namespace torchperf
