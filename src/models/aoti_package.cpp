#include "torchperf/models/aoti_package.h"

#include <c10/util/hash.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/compat/torch_error.h"
#include "torchperf/error.h"
#include "torchperf/measure/environment.h"
#include "torchperf/models/exported_program.h"
#include "torchperf/models/python_side.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

std::uint32_t le32(const std::string& b, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}

// The CPU flags one of Inductor's ISA names needs ("AVX512", "VecAVX2", "AMX_TILE",
// "AVX512_VNNI", …: the package's AOTI_CPU_ISA lists one or more), or nullopt for a name
// torchperf does not know, which is a note, not a refusal (the package may well run).
std::optional<std::vector<std::string>> flags_for_isa(std::string isa) {
  std::transform(isa.begin(), isa.end(), isa.begin(), [](unsigned char c) { return std::tolower(c); });
  if (isa.rfind("vec", 0) == 0) isa = isa.substr(3);
  using Flags = std::vector<std::string>;
  if (isa.empty() || isa == "none" || isa == "invalidvecisa" || isa == "default") return Flags{};
  if (isa == "avx2") return Flags{"avx2", "fma"};
  if (isa == "avx512") return Flags{"avx512f", "avx512bw", "avx512vl"};
  if (isa == "amx") return Flags{"avx512f", "amx_tile", "amx_bf16"};
  if (isa == "neon" || isa == "asimd") return Flags{"asimd"};
  if (isa.rfind("sve", 0) == 0) return Flags{"sve"};
  // PyTorch's CPU capabilities named as /proc/cpuinfo names them.
  for (const char* flag : {"avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512_vbmi",
                           "avx512_vpopcntdq", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
                           "amx_fp16", "avx512f", "avx512bw", "avx512vl", "avx512dq", "fma",
                           "f16c", "avx", "sse4_2"})
    if (isa == flag) return Flags{flag};
  return std::nullopt;
}

nlohmann::json read_entry(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The names in a package's AOTI_CPU_ISA ("AVX512 AVX512_VNNI AMX_TILE", "VecAVX2").
std::vector<std::string> isa_names(const std::string& text) {
  std::vector<std::string> names;
  std::string name;
  for (const char c : text + " ") {
    if (c == ' ' || c == ',' || c == ';' || c == '+') {
      if (!name.empty()) names.push_back(name);
      name.clear();
    } else {
      name += c;
    }
  }
  return names;
}

}  // namespace

std::string AotiOptions::to_string() const {
  return fmt::format("precision={},max_autotune={},device={}{}", precision, max_autotune ? 1 : 0,
                     device, aten_capability.empty() ? "" : ",aten_isa=" + aten_capability);
}

namespace {

std::pair<std::string, std::string> cache_dir_and_source() {
  if (const char* dir = std::getenv("TORCHPERF_CACHE_DIR"); dir && *dir)
    return {dir, "$TORCHPERF_CACHE_DIR"};
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return {(fs::path(xdg) / "torchperf").string(), "$XDG_CACHE_HOME"};
  const char* home = std::getenv("HOME");
  return {(fs::path(home && *home ? home : "/tmp") / ".cache" / "torchperf").string(), "$HOME"};
}

}  // namespace

// Checked where it is read: a cache that cannot be made or written surfaced as a raw
// "filesystem error" from whichever part touched it first (issue 63).
std::string torchperf_cache_dir() {
  const auto [dir, source] = cache_dir_and_source();
  // Once per folder in a process: every cache lookup asks for the path.
  static std::mutex mutex;
  static std::set<std::string> checked;
  const std::lock_guard<std::mutex> lock(mutex);
  if (checked.count(dir)) return dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && ::access(dir.c_str(), R_OK | W_OK | X_OK) != 0)
    ec = std::error_code(errno, std::generic_category());
  if (ec)
    throw RuntimeFailure(fmt::format("torchperf's cache '{}' (from {}): {}; expected a folder "
                                     "this user can read and write: set TORCHPERF_CACHE_DIR to one",
                                     dir, source, ec.message()));
  checked.insert(dir);
  return dir;
}

std::string aoti_cache_dir() { return (fs::path(torchperf_cache_dir()) / "aoti").string(); }

CacheEntryLock::CacheEntryLock(const std::string& lock_path) {
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ >= 0) ::flock(fd_, LOCK_EX);  // another process making the same entry finishes first
}

CacheEntryLock::~CacheEntryLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string archive_fingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw ModelError("model '" + path + "': cannot be read");
  const std::streamoff size = in.tellg();
  const std::streamoff tail_size = std::min<std::streamoff>(size, 65536 + 22);
  std::string tail(static_cast<std::size_t>(tail_size), '\0');
  in.seekg(size - tail_size);
  in.read(tail.data(), tail_size);
  const auto end = tail.rfind(std::string("PK\x05\x06", 4));
  if (end == std::string::npos || end + 22 > tail.size())
    throw ModelError("model '" + path + "': a truncated or corrupt zip archive (its end record is missing)");
  std::uint64_t dir_size = le32(tail, end + 12), dir_offset = le32(tail, end + 16);
  if (dir_offset == 0xFFFFFFFF || dir_size == 0xFFFFFFFF) {
    // Zip64: the sizes live in the zip64 end record, just before its locator.
    const auto z64 = tail.rfind(std::string("PK\x06\x06", 4));
    if (z64 == std::string::npos || z64 + 56 > tail.size())
      throw ModelError("model '" + path + "': a corrupt zip64 archive");
    dir_size = le32(tail, z64 + 40) | static_cast<std::uint64_t>(le32(tail, z64 + 44)) << 32;
    dir_offset = le32(tail, z64 + 48) | static_cast<std::uint64_t>(le32(tail, z64 + 52)) << 32;
  }
  if (dir_offset + dir_size > static_cast<std::uint64_t>(size))
    throw ModelError("model '" + path + "': a truncated zip archive (its directory lies past the end)");
  std::string directory(dir_size, '\0');
  in.seekg(static_cast<std::streamoff>(dir_offset));
  in.read(directory.data(), static_cast<std::streamsize>(dir_size));
  // Each record's name (without the archive's top folder, which is the file's stem), CRC-32 and
  // size. torch.export.save writes a fresh .data/serialization_id each time: left out, so that a
  // program exported again unchanged (--from-python) finds its packages.
  std::string content;
  for (std::size_t at = 0; at + 46 <= directory.size() && directory.compare(at, 4, "PK\x01\x02") == 0;) {
    const std::size_t name_len = le32(directory, at + 28) & 0xFFFF;
    const std::size_t extra_len = le32(directory, at + 30) & 0xFFFF;
    const std::size_t comment_len = le32(directory, at + 32) & 0xFFFF;
    std::string name = directory.substr(at + 46, name_len);
    name = name.substr(std::min(name.size(), name.find('/') + 1));
    if (name != ".data/serialization_id")
      content += name + '\0' + directory.substr(at + 16, 4) + directory.substr(at + 24, 4);
    at += 46 + name_len + extra_len + comment_len;
  }
  return c10::sha1(content).str();
}

std::string package_cache_key(const std::string& program_path, const AotiOptions& options) {
  std::string isa;
  for (const auto& f : cpu_isa_flags()) isa += f + " ";
  return c10::sha1(archive_fingerprint(program_path) + "|" + options.to_string() + "|" +
                   compat::torch_version() + "|" + isa)
      .str()
      .substr(0, 24);
}

std::string package_unrunnable_reason(const std::string& package_path) {
  try {
    if (archive_kind(package_path) != ArchiveKind::kAotiPackage)
      return "not an AOTInductor package (no data/aotinductor/ in the archive)";
  } catch (const Error& e) {
    return e.what();
  }
  std::unordered_map<std::string, std::string> meta;
  try {
    meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(package_path, "model");
  } catch (const std::exception& e) {
    return "its metadata cannot be read (" + compat::concise_error_message(e.what()) + ")";
  }
  utsname un{};
  ::uname(&un);
  const auto machine = meta.find("AOTI_MACHINE");
  if (machine != meta.end() && !machine->second.empty() && machine->second != un.machine)
    return "built for " + machine->second + ", this machine is " + un.machine;
  const auto isa = meta.find("AOTI_CPU_ISA");
  if (isa == meta.end()) return "";
  return check_isa(isa->second, cpu_isa_flags()).refusal;
}

std::string package_isa_note(const std::string& package_path) {
  std::unordered_map<std::string, std::string> meta;
  try {
    meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(package_path, "model");
  } catch (const std::exception&) {
    return "";
  }
  const auto isa = meta.find("AOTI_CPU_ISA");
  return isa == meta.end() ? "" : check_isa(isa->second, cpu_isa_flags()).note;
}

IsaCheck check_isa(const std::string& isa, const std::vector<std::string>& cpu_flags) {
  IsaCheck check;
  std::string unknown;
  for (const auto& name : isa_names(isa)) {
    const auto needs = flags_for_isa(name);
    if (!needs) {
      unknown += (unknown.empty() ? "" : ", ") + name;
      continue;
    }
    for (const auto& flag : *needs)
      if (check.refusal.empty() &&
          std::find(cpu_flags.begin(), cpu_flags.end(), flag) == cpu_flags.end())
        check.refusal = "built for the CPU ISA " + isa + ", whose instructions this CPU lacks (no " +
                        flag + "): it would die with SIGILL";
  }
  if (!unknown.empty())
    check.note = "the package names the CPU ISA " + isa + " (" + unknown +
                 ": not checked against this CPU, as torchperf does not map it to CPU flags)";
  return check;
}

std::string cached_aoti_package(const std::string& program_path, const AotiOptions& options) {
  const fs::path entry = fs::path(aoti_cache_dir()) / package_cache_key(program_path, options);
  const fs::path package = entry / "package.pt2";
  if (!fs::exists(package) || read_entry(entry / "entry.json").is_null()) return "";
  return package_unrunnable_reason(package.string()).empty() ? package.string() : "";
}

CompiledPackage ensure_aoti_package(const std::string& program_path, const AotiOptions& options,
                                    const CommandLimits& limits) {
  const fs::path entry = fs::path(aoti_cache_dir()) / package_cache_key(program_path, options);
  std::error_code ec;
  fs::create_directories(entry, ec);
  if (ec)
    throw RuntimeFailure("cannot create the AOTInductor cache folder '" + entry.string() +
                         "': " + ec.message() + " (set TORCHPERF_CACHE_DIR)");
  const CacheEntryLock lock((entry / "lock").string());
  CompiledPackage result;
  result.path = (entry / "package.pt2").string();
  const nlohmann::json meta = read_entry(entry / "entry.json");
  if (fs::exists(result.path)) {
    const std::string why = meta.is_null() ? "its record entry.json is missing or damaged"
                                           : package_unrunnable_reason(result.path);
    if (why.empty()) {
      result.cache_hit = true;
      result.isa_note = package_isa_note(result.path);
      result.compile_s = meta.value("compile_s", 0.0);
      return result;
    }
    result.rebuilt_because = "the cached package " + result.path + " was unusable: " + why;
    fs::remove(result.path, ec);
  }
  fs::remove(entry / "entry.json", ec);
  PythonStep step;
  step.module = "torchperf.aoti_compile";
  step.args = {program_path, result.path, "--precision", options.precision};
  if (options.max_autotune) step.args.push_back("--max-autotune");
  if (options.device != "cpu") step.args.insert(step.args.end(), {"--device", options.device});
  step.environment["ATEN_CPU_CAPABILITY"] = options.aten_capability;  // "" unsets it
  step.limits = limits;
  step.what = "compiling '" + program_path + "' with AOTInductor (" + options.to_string() + ")";
  const nlohmann::json answer = run_python_step(step);
  // Compiled here for this CPU: the ISA is checked before a cached package is reused, not after
  // a compile (Inductor picked it on this CPU); a name torchperf does not know is a note.
  result.isa_note = package_isa_note(result.path);
  result.compile_s = answer.value("compile_s", 0.0);
  nlohmann::json record = {{"compile_s", result.compile_s},
                           {"options", options.to_string()},
                           {"program", fs::absolute(program_path).string()},
                           {"torch_version", answer.value("torch_version", "")},
                           {"cpu_isa", answer.value("cpu_isa", "")}};
  std::ofstream((entry / "entry.json").string()) << record.dump(2) << "\n";
  return result;
}

}  // namespace torchperf
