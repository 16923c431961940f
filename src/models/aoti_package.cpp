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

bool has_flag(const std::string& flag) {
  const auto flags = cpu_isa_flags();
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// The CPU flags a package's AOTI_CPU_ISA (Inductor's vector ISA: "AVX2", "AVX512", "AMX", …)
// needs, or nullopt for an ISA torchperf does not know.
std::optional<std::vector<std::string>> flags_for_isa(std::string isa) {
  std::transform(isa.begin(), isa.end(), isa.begin(), [](unsigned char c) { return std::tolower(c); });
  if (isa.empty() || isa == "none" || isa == "invalidvecisa") return std::vector<std::string>{};
  if (isa == "avx2") return std::vector<std::string>{"avx2", "fma"};
  if (isa == "avx512") return std::vector<std::string>{"avx512f", "avx512bw", "avx512vl"};
  if (isa == "amx") return std::vector<std::string>{"avx512f", "amx_tile", "amx_bf16"};
  if (isa == "neon" || isa == "asimd") return std::vector<std::string>{"asimd"};
  if (isa.rfind("sve", 0) == 0) return std::vector<std::string>{"sve"};
  return std::nullopt;
}

struct EntryLock {
  int fd = -1;
  explicit EntryLock(const std::string& path) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::flock(fd, LOCK_EX);  // another process compiling the same entry finishes first
  }
  ~EntryLock() {
    if (fd >= 0) ::close(fd);
  }
};

nlohmann::json read_entry(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace

std::string AotiOptions::to_string() const {
  return fmt::format("precision={},max_autotune={},device={}{}", precision, max_autotune ? 1 : 0,
                     device, aten_capability.empty() ? "" : ",aten_isa=" + aten_capability);
}

std::string aoti_cache_dir() {
  if (const char* dir = std::getenv("TORCHPERF_CACHE_DIR"); dir && *dir)
    return (fs::path(dir) / "aoti").string();
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "torchperf" / "aoti").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "torchperf" / "aoti").string();
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
  const auto needs = flags_for_isa(isa->second);
  if (!needs) return "built for the CPU ISA " + isa->second + ", which torchperf does not know";
  for (const auto& flag : *needs)
    if (!has_flag(flag))
      return "built for the CPU ISA " + isa->second + ", whose instructions this CPU lacks (no " +
             flag + "): it would die with SIGILL";
  return "";
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
  EntryLock lock((entry / "lock").string());
  CompiledPackage result;
  result.path = (entry / "package.pt2").string();
  const nlohmann::json meta = read_entry(entry / "entry.json");
  if (fs::exists(result.path)) {
    const std::string why = meta.is_null() ? "its record entry.json is missing or damaged"
                                           : package_unrunnable_reason(result.path);
    if (why.empty()) {
      result.cache_hit = true;
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
  const std::string why = package_unrunnable_reason(result.path);
  if (!why.empty()) throw CompileError(step.what + ": the package it wrote is unusable: " + why);
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
