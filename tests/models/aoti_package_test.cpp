// These tests compile with AOTInductor for real (the Python side, the venv's torch, g++): they
// run in their own executable after fixtures.aoti has compiled the Linear stack once into the
// shared test cache ($TORCHPERF_CACHE_DIR), and copy from there where they need a package.
#include "torchperf/models/aoti_package.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/test_support.h"
#include "torchperf/error.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;
using testing::fixture;

std::string shared_package() {
  const std::string path = cached_aoti_package(fixture("mlp_dynamic.pt2"), AotiOptions{});
  EXPECT_FALSE(path.empty()) << "fixtures.aoti should have compiled it into "
                             << aoti_cache_dir();
  return path;
}

// A cache of this test's own, so that what it damages or rebuilds is its alone.
fs::path private_cache(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("torchperf-aoti-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The package's metadata says it was built for another CPU ISA (ARM's NEON on this x86 machine,
// AVX2 on an ARM one): what a cache copied from another machine would hold.
void claim_another_isa(const std::string& package) {
  const std::string script =
      "import json, shutil, sys, zipfile\n"
      "src, other = sys.argv[1], sys.argv[1] + '.tmp'\n"
      "import platform\n"
      "isa = 'AVX2' if platform.machine() in ('aarch64', 'arm64') else 'NEON'\n"
      "with zipfile.ZipFile(src) as a, zipfile.ZipFile(other, 'w') as b:\n"
      "    for info in a.infolist():\n"
      "        data = a.read(info.filename)\n"
      "        if info.filename.endswith('_metadata.json'):\n"
      "            meta = json.loads(data)\n"
      "            if 'AOTI_CPU_ISA' in meta: meta['AOTI_CPU_ISA'] = isa\n"
      "            data = json.dumps(meta).encode()\n"
      "        b.writestr(info, data)\n"
      "shutil.move(other, src)\n";
  const fs::path file = fs::temp_directory_path() / "torchperf-claim-isa.py";
  std::ofstream(file) << script;
  ASSERT_EQ(std::system(("python3 " + file.string() + " " + package).c_str()), 0);
}

}  // namespace

TEST(AotiPackageTest, ThePackageOfTheFixtureIsInTheSharedCacheAndRunnableHere) {
  const std::string package = shared_package();
  EXPECT_EQ(package_unrunnable_reason(package), "");
  const std::string key = package_cache_key(fixture("mlp_dynamic.pt2"), AotiOptions{});
  EXPECT_NE(package.find(key), std::string::npos);
  // Another option is another entry.
  AotiOptions bf16;
  bf16.precision = "bf16";
  EXPECT_NE(package_cache_key(fixture("mlp_dynamic.pt2"), bf16), key);
  EXPECT_NE(package_cache_key(fixture("exported.pt2"), AotiOptions{}), key);
}

TEST(AotiPackageTest, EveryIsaNameTorchKnowsIsCheckedAndAnUnknownOneIsANoteNotARefusal) {
  // What PyTorch 2.11 wrote on the H100's Xeon (AVX-512 with AMX): refused there after its
  // compile ("which torchperf does not know", issue 40); now checked name by name.
  const std::vector<std::string> xeon = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                         "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
                                         "amx_bf16", "amx_int8"};
  const IsaCheck on_xeon = check_isa("AVX512 AVX512_VNNI AMX_TILE", xeon);
  EXPECT_EQ(on_xeon.refusal, "");
  EXPECT_EQ(on_xeon.note, "");
  for (const char* isa : {"VecAVX512", "AMX", "AVX512_BF16", "avx512_fp16", "AMX_INT8"})
    EXPECT_EQ(check_isa(isa, xeon).refusal, "") << isa;
  // On an AVX2 CPU the same package would die with SIGILL: refused, naming the missing flag.
  const IsaCheck on_avx2 = check_isa("AVX512 AVX512_VNNI AMX_TILE", {"avx2", "fma"});
  EXPECT_NE(on_avx2.refusal.find("no avx512f"), std::string::npos) << on_avx2.refusal;
  // A name torchperf cannot map to CPU flags is said, not refused.
  const IsaCheck unknown = check_isa("AVX512 AVX10_2", xeon);
  EXPECT_EQ(unknown.refusal, "");
  EXPECT_NE(unknown.note.find("AVX10_2"), std::string::npos) << unknown.note;
}

TEST(AotiPackageTest, AFingerprintReadsTheZipDirectoryAndRefusesATruncatedFile) {
  EXPECT_EQ(archive_fingerprint(fixture("mlp_dynamic.pt2")),
            archive_fingerprint(fixture("mlp_dynamic.pt2")));
  EXPECT_NE(archive_fingerprint(fixture("mlp_dynamic.pt2")),
            archive_fingerprint(fixture("exported.pt2")));
  EXPECT_THROW(archive_fingerprint(fixture("truncated.pt2")), ModelError);
}

TEST(AotiPackageTest, SaysWhyAFileIsNotARunnablePackage) {
  EXPECT_NE(package_unrunnable_reason(fixture("mlp_dynamic.pt2")).find("not an AOTInductor package"),
            std::string::npos);
  const fs::path dir = private_cache("reasons");
  const std::string copy = (dir / "package.pt2").string();
  fs::copy_file(shared_package(), copy);
  claim_another_isa(copy);
  const std::string why = package_unrunnable_reason(copy);
  EXPECT_NE(why.find("whose instructions this CPU lacks"), std::string::npos) << why;
  EXPECT_NE(why.find("SIGILL"), std::string::npos) << why;
  std::ofstream(copy, std::ios::trunc) << "PK";
  EXPECT_NE(package_unrunnable_reason(copy), "");
}

TEST(AotiPackageTest, AnEntryForAnotherIsaIsCompiledAgainThenFoundInTheCache) {
  const std::string shared = shared_package();
  const fs::path dir = private_cache("rebuild");
  ::setenv("TORCHPERF_CACHE_DIR", dir.c_str(), 1);
  const std::string program = fixture("mlp_dynamic.pt2");
  const fs::path entry = fs::path(aoti_cache_dir()) / package_cache_key(program, AotiOptions{});
  fs::create_directories(entry);
  fs::copy_file(shared, entry / "package.pt2");
  std::ofstream(entry / "entry.json") << R"({"compile_s": 1.0})";
  claim_another_isa((entry / "package.pt2").string());
  EXPECT_EQ(cached_aoti_package(program, AotiOptions{}), "");

  const CompiledPackage built = ensure_aoti_package(program, AotiOptions{}, within(600));
  EXPECT_FALSE(built.cache_hit);
  EXPECT_NE(built.rebuilt_because.find("this CPU lacks"), std::string::npos) << built.rebuilt_because;
  EXPECT_GT(built.compile_s, 0);
  EXPECT_EQ(package_unrunnable_reason(built.path), "");

  const CompiledPackage again = ensure_aoti_package(program, AotiOptions{}, within(600));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.path, built.path);
  EXPECT_DOUBLE_EQ(again.compile_s, built.compile_s);  // what it cost then, paid once
  fs::remove_all(dir);
}

TEST(AotiPackageTest, ACompileWithoutACompilerIsACompileErrorThatSaysSo) {
  const fs::path dir = private_cache("no-compiler");
  ::setenv("TORCHPERF_CACHE_DIR", dir.c_str(), 1);
  ::setenv("CXX", "/nonexistent/c++", 1);  // Inductor's C++ compiler
  try {
    ensure_aoti_package(fixture("mlp_dynamic.pt2"), AotiOptions{}, within(600));
    FAIL() << "no error";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("compiling '" + fixture("mlp_dynamic.pt2") + "' with AOTInductor"),
              std::string::npos) << what;
    EXPECT_NE(what.find("compile failed"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_EQ(cached_aoti_package(fixture("mlp_dynamic.pt2"), AotiOptions{}), "");  // nothing half-written
  fs::remove_all(dir);
}

TEST(AotiPackageTest, ACompileOverItsTimeLimitOrMemoryCapIsStoppedAndNamed) {
  const fs::path dir = private_cache("limits");
  ::setenv("TORCHPERF_CACHE_DIR", dir.c_str(), 1);
  try {
    ensure_aoti_package(fixture("mlp_dynamic.pt2"), AotiOptions{}, within(1.0));
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeded its time limit of 1 s"), std::string::npos)
        << e.what();
  }
  try {
    ensure_aoti_package(fixture("mlp_dynamic.pt2"), AotiOptions{}, within(600, 64LL << 20));
    FAIL() << "no error";
  } catch (const ResourceLimit& e) {
    EXPECT_NE(std::string(e.what()).find("over the memory cap of 0.06 GiB"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(AotiPackageTest, APackageGivenWhereAProgramIsExpectedIsAModelError) {
  const std::string shared = shared_package();
  const fs::path dir = private_cache("package-as-program");
  ::setenv("TORCHPERF_CACHE_DIR", dir.c_str(), 1);
  const std::string package = (dir / "given.pt2").string();
  fs::copy_file(shared, package);
  try {
    ensure_aoti_package(package, AotiOptions{}, within(600));
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("an AOTInductor package (compiled), not an ExportedProgram"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace torchperf
