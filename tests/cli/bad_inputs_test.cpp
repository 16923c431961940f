// A table of bad inputs across the commands, as a hostile but realistic user gives them: each
// gets one line, `torchperf: error: …`, naming the input and what was expected, and the exit code
// documented for its kind (docs/cli.md). Requests to a running server are in serve_command_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace torchperf {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::run_cli;

struct BadInput {
  std::vector<std::string> args;
  int exit_code;
  std::string piece;  // a part of the message that names the cause
};

// Drops the TorchScript deprecation note, which precedes the error for a TorchScript file.
std::string error_lines(const CliRun& run) {
  const std::string note = "torchperf: note: ";
  return run.err.rfind(note, 0) == 0 ? run.err.substr(run.err.find('\n') + 1) : run.err;
}

}  // namespace

TEST(BadInputsTest, EachGetsOneLineNamingTheCauseAndItsOwnExitCode) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-bad-inputs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string a_file = (dir / "a-file").string();
  std::ofstream(a_file) << "x";
  // A program written onto a full disk (issue 84's probe: libstdc++'s "filesystem error").
  const std::string full_program = (dir / "full.pt2").string();
  std::filesystem::create_symlink("/dev/full", full_program);
  const std::string text = fixture("not_a_model.txt");
  const std::string lengths = (dir / "lengths.txt").string();
  std::ofstream(lengths) << "12\nx\n";
  const std::string named = "int64:S@0..1000;int64:S@1..2";  // issue 52: lengths that vary
  const std::vector<BadInput> table = {
      // The model file first, before the flags that feed it.
      {{"bench", "/nonexistent/model.pt"}, 4, "no such file"},
      {{"bench", text}, 4, "not a TorchScript archive"},
      {{"bench", dir.string()}, 4, "a folder; expected a model file"},
      {{"bench", fixture("newer_torch.pt")}, 4, "file format version 99"},
      {{"bench", fixture("truncated.pt2")}, 4, "truncated"},
      {{"bench", fixture("corrupt_program.pt2")}, 4, "not a readable torch.export program"},
      {{"bench", fixture("exported.pt2"), "--batch", "8"}, 2, "static batch of 2"},
      {{"bench", fixture("mlp_dynamic.pt2"), "--graph", "frozen"}, 2, "needs a TorchScript graph"},
      {{"bench", fixture("resnet18_scripted.pt"), "--input", "3x224x224", "--graph", "aoti"}, 2,
       "needs a torch.export program"},
      {{"lint", fixture("mlp_dynamic.pt2")}, 4, "lint reads TorchScript graphs"},
      {{"train", fixture("mlp_dynamic.pt2")}, 4, "a torch.export program (.pt2) is an inference graph"},
      {{"bench", "--from-python", "no_such_module:Net", "--input", "8", "--quiet"}, 10, "importing 'no_such_module' failed"},
      {{"bench", "--from-python", "nocolon", "--input", "8", "--quiet"}, 2, "expected MODULE:CALLABLE"},
      {{"train", "--from-python", "no_such_module:Net", "--quiet"}, 10, "importing 'no_such_module' failed"},
      {{"train", "builtin:mlp", "--from-python", "m:Net", "--quiet"}, 2, "not both"},
      {{"train", "builtin:convbn", "--lr-scaling", "cubic", "--quiet"}, 2, "--lr-scaling 'cubic': expected none or linear"},
      {{"train", "builtin:convbn", "--budget", "-1", "--quiet"}, 2, "--budget: expected a duration"},
      {{"train", "builtin:convbn", "--nproc", "0", "--quiet"}, 2, "--nproc and --nnodes: expected at least 1"},
      {{"train", "builtin:convbn", "--nnodes", "2", "--quiet"}, 2, "expected --rdzv-endpoint HOST:PORT"},
      {{"train", "builtin:convbn", "--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1", "--quiet"}, 2,
       "--node-rank 2: expected 0 .. 1"},
      {{"train", "builtin:convbn", "--nproc", "2", "--rdzv-endpoint", "nocolon", "--quiet"}, 2,
       "--rdzv-endpoint 'nocolon': expected HOST:PORT"},
      // Issue 63: read by torch's launcher, 12 s later, with its ValueError.
      {{"train", "builtin:convbn", "--nproc", "2", "--rdzv-endpoint", "foo::bar", "--quiet"}, 2,
       "--rdzv-endpoint 'foo::bar': expected HOST:PORT with a port from 1 to 65535"},
      // Issue 63: 64 ranks started on a 2-core machine, with no memory check.
      {{"train", "builtin:convbn", "--nproc", "4096", "--quiet"}, 2,
       "--nproc 4096: 4096 ranks take at least 1200.0 GiB"},
      {{"train", "builtin:convbn", "--nnodes", "2", "--rdzv-endpoint", "h:1", "--ladder", "--quiet"}, 2,
       "--ladder runs on one node"},
      {{"train", "builtin:convbn", "--ddp-bucket-mb", "5", "--quiet"}, 2, "DDP's settings apply to ranks"},
      {{"train", "builtin:convbn", "--checkpoint", "every:zero", "--quiet"}, 2,
       "checkpoint 'every:zero': expected off, blocks, every:N"},
      {{"train", "builtin:convbn", "--memory-cap", "lots", "--quiet"}, 2, "--memory-cap"},
      {{"train", "builtin:encoder", "--quiet"}, 4,
       "takes 2 inputs (input_ids, attention_mask), and train feeds a batch of one tensor"},
      {{"serve-tune", "builtin:mlp", "--budget", "soon", "--quiet"}, 2, "--budget: expected a duration"},
      {{"serve-tune", "builtin:mlp", "--max-start", "soon", "--budget", "10s", "--quiet"}, 2,
       "--max-start 'soon': expected a time with a unit"},
      {{"bench", fixture("state_dict.pt")}, 4, "a torch.save file"},
      {{"bench", fixture("other.zip")}, 4, "not a PyTorch archive"},
      {{"tune", text, "--quiet"}, 4, "not a TorchScript archive"},
      {{"lint", text}, 4, "not a TorchScript archive"},
      {{"train", text}, 4, "not a TorchScript archive"},
      {{"serve", text}, 4, "not a TorchScript archive"},
      // Then the flags.
      {{"bench", fixture("resnet18_scripted.pt")}, 2, "expected --input SPEC"},
      {{"bench", fixture("resnet18_scripted.pt"), "--input", "3x100"}, 5, "rejected its inputs"},
      {{"bench", "builtin:mlp", "--time", "0"}, 2, "--time: expected a positive number"},
      {{"bench", "builtin:mlp", "--precision", "fp8"}, 2, "fp8"},
      {{"bench", "builtin:mlp", "--memory-cap", "lots"}, 2, "--memory-cap"},
      {{"bench", "builtin:mlp", "--batch", "100000000"}, 9, "the inputs alone need 292.06 GiB"},
      {{"bench", "builtin:mlp", "--inputs-file", text}, 4, "not a torch.save file of tensors"},
      // int8's calibration samples of another shape: refused before any point, by bench and tune.
      {{"bench", "builtin:mlp", "--runtime", "python", "--precision", "int8-static",
        "--calibration", fixture("inputs_image.pt")},
       5,
       "--calibration '" + fixture("inputs_image.pt") + "': input 0 is Float[2,3,224,224]; the "
       "model is fed 784 (the batch first)"},
      // Issue 84's probe: samples that calibrate nothing were accepted in silence.
      {{"bench", "builtin:mlp", "--calibration", fixture("inputs_image.pt")}, 2,
       "only precision=int8-static calibrates, and neither side here runs it (precision=fp32)"},
      {{"tune", "builtin:mlp", "--calibration", fixture("inputs_image.pt"), "--quiet"}, 5,
       "input 0 is Float[2,3,224,224]"},
      {{"bench", "builtin:mlp", "--runtime", "python", "--precision", "int8-static",
        "--calibration", text},
       4, "--calibration '" + text + "': "},
      {{"tune", "builtin:mlp", "--out", a_file, "--quiet"}, 2, "--out '" + a_file + "'"},
      {{"tune", "builtin:mlp", "--budget", "soon", "--quiet"}, 2, "--budget"},
      {{"tune", "builtin:mlp", "--accuracy", "cosine>=2", "--quiet"}, 2, "cannot be met"},
      {{"tune", "--resume", (dir / "none").string(), "--quiet"}, 6, "no journal"},
      // Ray needs half a minute to give up on an address it cannot parse: refused at once.
      {{"tune", "builtin:mlp", "--cluster", "ray://head:port", "--quiet"}, 2,
       "--cluster 'ray://head:port': the port 'port' is not a number from 1 to 65535"},
      // A folder that cannot be made: the operation and the path, not libstdc++'s words.
      {{"serve-tune", "builtin:mlp", "--out", a_file + "/x", "--budget", "10s", "--quiet"}, 1,
       "cannot create directories '" + a_file + "/x/logs': Not a directory"},
      {{"report", text}, 6, "is not a tune journal"},
      {{"trace", "/nonexistent.json"}, 8, "no such file"},
      {{"trace", text}, 8, "not JSON"},
      {{"trace", dir.string()}, 8, "the folder has no trace files"},
      {{"export", "builtin:mlp", a_file}, 2, "exists; pass --force to overwrite it"},
      {{"export", "builtin:nope", (dir / "x.pt").string()}, 2, "unknown built-in model"},
      // A full disk: one line, no abort, nothing half-written.
      {{"export", "builtin:mlp", "/dev/full", "--force"}, 1,
       "cannot write '/dev/full': No space left on device (nothing was written)"},
      {{"export", "builtin:mlp", full_program, "--force"}, 1,
       "cannot write '" + full_program + "': No space left on device (nothing was written)"},
      {{"guard", dir.string(), text}, 4, "is a folder; expected a file written by torch.save"},
      {{"serve", "builtin:mlp", "--max-batch", "0"}, 2, "--max-batch 0"},
      {{"train", "builtin:mlp", "--ladder", "--rounds", "1"}, 2, "--rounds"},
      {{"bench", "builtin:encoder", "--input", named}, 2, "S is named but has no distribution"},
      {{"bench", "builtin:encoder", "--input", "int64:32@0..1000;int64:32@1..2", "--dim", "S=4..64"},
       2, "the input spec names no dimension S"},
      {{"bench", "builtin:encoder", "--dim", "S=4..64"}, 2, "name no dimension; give --input"},
      {{"bench", "builtin:encoder", "--input", named, "--dim", "S=file:" + lengths}, 2,
       "line 2: expected one positive whole number, got 'x'"},
      {{"bench", "builtin:encoder", "--input", named, "--dim", "S=64..4"}, 2, "is empty"},
      {{"bench", "builtin:encoder", "--input", named, "--dim", "S=4..64", "--padding", "buckets:16/32"},
       2, "do not cover S's longest length 64"},
      {{"bench", "builtin:encoder", "--input", named, "--dim", "S=4..64", "--padding", "pow2"}, 2,
       "expected batch-max, multiple:M"},
      // Real samples that disagree: in a rank, in a dtype.
      {{"bench", "builtin:encoder", "--inputs-file", fixture("token_samples_rank.pt")}, 4,
       "differ in the rank of input 0; every sample has the same inputs, ranks and dtypes"},
      {{"bench", "builtin:encoder", "--inputs-file", fixture("token_samples_dtype.pt")}, 4,
       "differ in the dtype of input 0"},
      // A program's named dimension: exported static, or exported over a narrower range.
      {{"bench", fixture("token_pool_static.pt2"), "--input", "int64:S@0..1000;int64:S@1..2",
        "--dim", "S=4..64"}, 5, "dimension 1 was exported static (size 32)"},
      {{"bench", fixture("token_pool_dynamic.pt2"), "--input", "int64:S@0..1000;int64:S@1..2",
        "--dim", "S=4..300"}, 5, "outside the range input 'input_ids' dimension 1 was exported with (2..256)"},
      {{"load", "http://127.0.0.1:1", "--model", "m", "--rate", "10", "--duration", "1"}, 1,
       "connection refused"},
      {{"load", "http://127.0.0.1:1", "--model", "m", "--rate", "10", "--dim", "S=64..4"}, 2,
       "is empty"},
      {{"load", "http://127.0.0.1:99999", "--model", "m", "--rate", "10", "--duration", "1"}, 2,
       "port 99999 is out of range (expected 1-65535)"},
  };
  for (const auto& bad : table) {
    const CliRun run = run_cli(bad.args);
    std::string command;
    for (const auto& a : bad.args) command += a + " ";
    const std::string err = error_lines(run);
    EXPECT_EQ(run.exit_code, bad.exit_code) << command << "\n" << run.err;
    EXPECT_EQ(err.rfind("torchperf: error: ", 0), 0u) << command << "\n" << run.err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << command << "\n" << run.err;
    EXPECT_NE(err.find(bad.piece), std::string::npos) << command << "\n" << run.err;
  }
  std::filesystem::remove_all(dir);
}

// Issue 61: an engine asked for that is not installed, a server asked to host one, and an operator
// the engine has no kernel for (ONNX Runtime has no int16 MatMul): each one line, its own code.
TEST(BadInputsTest, AnEngineNotInstalledOrUnableToRunTheModelIsOneLineWithItsExitCode) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("torchperf-engine-inputs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "int16_model.py") << "import torch\n"
                                           "class Net(torch.nn.Module):\n"
                                           "    def forward(self, x):\n"
                                           "        y = (x * 8).to(torch.int16)\n"
                                           "        return (y @ y.T).float()\n";
  const struct {
    std::string script;
    int exit_code;
    std::string piece;
  } table[] = {
      {"TORCHPERF_ENGINES=none \"$TORCHPERF\" bench builtin:mlp --runtime onnxruntime --quiet", 2,
       "ONNX Runtime is not installed in the Python worker's Python (pip install "
       "'torchperf[engines]'"},
      {"TORCHPERF_ENGINES=none \"$TORCHPERF\" serve builtin:mlp --config runtime=openvino "
       "--port 0",
       2, "OpenVINO is not installed in the Python worker's Python"},
      {"cd " + dir.string() + " && \"$TORCHPERF\" bench --from-python int16_model:Net --input 5 "
       "--runtime onnxruntime --time 0.2 --quiet",
       10, "ONNX Runtime could not load the converted model"},
  };
  for (const auto& bad : table) {
    const CliRun run = testing::run_shell(bad.script);
    EXPECT_EQ(run.exit_code, bad.exit_code) << bad.script << "\n" << run.err;
    EXPECT_NE(run.err.find(bad.piece), std::string::npos) << bad.script << "\n" << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << bad.script << "\n" << run.err;
  }
  std::filesystem::remove_all(dir);
}

// Issue 63: a cache that cannot be made surfaced as a raw "filesystem error" from its first user.
TEST(BadInputsTest, ACacheFolderThatCannotBeMadeIsNamedWithWhereItsPathCameFrom) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("torchperf-cache-file-" + std::to_string(::getpid()));
  std::ofstream(file) << "a file, not a folder\n";
  const CliRun run = testing::run_shell("TORCHPERF_CACHE_DIR=" + file.string() +
                                        "/cache \"$TORCHPERF\" bench builtin:mlp --time 0.2 "
                                        "--quiet");
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("torchperf's cache '" + file.string() +
                         "/cache' (from $TORCHPERF_CACHE_DIR): Not a directory; expected a folder"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("filesystem error"), std::string::npos) << run.err;
  std::filesystem::remove(file);
}

}  // namespace torchperf
