// AOTInductor packages compiled from a torch.export program, once: the compile runs in the Python
// side (python/torchperf/aoti_compile.py) and its package is cached by (program, options, torch
// version, CPU ISA), so a cache hit costs a lookup. A package this CPU cannot run (built for
// another ISA: it would die with SIGILL) and a corrupt entry are rebuilt.
#pragma once

#include <string>
#include <vector>

#include "torchperf/process/command_run.h"

namespace torchperf {

// What a package is compiled with: each knob value that changes the code Inductor writes.
struct AotiOptions {
  std::string precision = "fp32";  // fp32, or bf16 (the program cast, then exported again)
  bool max_autotune = false;       // Inductor benchmarks kernel choices while compiling
  std::string device = "cpu";
  // ATEN_CPU_CAPABILITY the package is compiled under ("": none): Inductor picks its vector ISA
  // under ATen's cap, so a capped process (the aten_isa knob) has packages of its own.
  std::string aten_capability;
  // "precision=fp32,max_autotune=0,device=cpu" (and ",aten_isa=avx2" under a cap)
  std::string to_string() const;
};

struct CompiledPackage {
  std::string path;
  double compile_s = 0;     // what compiling it cost, when it was compiled (a hit: the cost then)
  bool cache_hit = false;   // this call compiled nothing
  std::string rebuilt_because;  // a corrupt entry, another ISA, ... ("" when not rebuilt)
  std::string isa_note;  // an ISA name torchperf does not know, not checked ("" when none)
};

// torchperf's cache: $TORCHPERF_CACHE_DIR, else $XDG_CACHE_HOME/torchperf, else
// ~/.cache/torchperf. Packages live in its aoti/, built-ins in builtins/, Inductor's caches in
// inductor/.
std::string torchperf_cache_dir();
// torchperf_cache_dir()/aoti.
std::string aoti_cache_dir();

// Holds an exclusive lock on a cache entry's lock file while alive: another process making the
// same entry waits, then finds it made.
class CacheEntryLock {
 public:
  explicit CacheEntryLock(const std::string& lock_path);
  ~CacheEntryLock();
  CacheEntryLock(const CacheEntryLock&) = delete;
  CacheEntryLock& operator=(const CacheEntryLock&) = delete;

 private:
  int fd_ = -1;
};

// A content fingerprint of a zip archive that reads only its central directory (every record's
// name, size and CRC-32): cheap for a model of any size. Throws ModelError for a truncated zip.
std::string archive_fingerprint(const std::string& path);

// The cache entry's name for a program under options on this torch and this CPU.
std::string package_cache_key(const std::string& program_path, const AotiOptions& options);

// Why this machine cannot run the package, "" when it can: another machine (x86_64, aarch64),
// an ISA whose instructions this CPU lacks, a file that is not an AOTInductor package.
std::string package_unrunnable_reason(const std::string& package_path);

// A package's AOTI_CPU_ISA ("AVX512 AVX512_VNNI AMX_TILE", "VecAVX2", …) against a CPU's flags:
// a refusal when a name torchperf knows needs a flag the CPU lacks (the package would die with
// SIGILL); a note naming the names it does not know, which are not a reason to refuse.
struct IsaCheck {
  std::string refusal, note;
};
IsaCheck check_isa(const std::string& isa, const std::vector<std::string>& cpu_flags);

// A note naming the ISA names in the package torchperf does not know ("" when none): they are
// not checked, and not a reason to refuse it.
std::string package_isa_note(const std::string& package_path);

// The package for program under options: from the cache, or compiled now (under limits) and
// cached. Throws what the compile step throws (CompileError, ResourceLimit, ModelError).
CompiledPackage ensure_aoti_package(const std::string& program_path, const AotiOptions& options,
                                    const CommandLimits& limits);

// The cached package's path if one is there, whole and runnable here; "" otherwise.
std::string cached_aoti_package(const std::string& program_path, const AotiOptions& options);

}  // namespace torchperf
