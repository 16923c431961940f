#include "torchperf/report/apply_snippets.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/feed/input_spec.h"
#include "torchperf/feed/length_distribution.h"
#include "torchperf/feed/shape_stream.h"
#include "torchperf/runtime/runtime.h"
#include "torchperf/text.h"
#include "torchperf/json_fields.h"

namespace torchperf {
namespace {

struct TensorExample {
  TensorSpec spec;
  std::int64_t batch = 1;
};

struct DTypeNames {
  const char* cpp;
  const char* python;
};

DTypeNames names_of(DType d) {
  switch (d) {
    case DType::kFloat32: return {"torch::kFloat", "torch.float32"};
    case DType::kFloat16: return {"torch::kHalf", "torch.float16"};
    case DType::kBFloat16: return {"torch::kBFloat16", "torch.bfloat16"};
    case DType::kFloat64: return {"torch::kDouble", "torch.float64"};
    case DType::kInt64: return {"torch::kLong", "torch.int64"};
    case DType::kInt32: return {"torch::kInt", "torch.int32"};
    case DType::kUInt8: return {"torch::kByte", "torch.uint8"};
    case DType::kBool: return {"torch::kBool", "torch.bool"};
  }
  return {"torch::kFloat", "torch.float32"};
}

const char* cpp_dtype(DType d) { return names_of(d).cpp; }
const char* python_dtype(DType d) { return names_of(d).python; }

std::string dims(const TensorExample& t, const char* open, const char* close) {
  std::string s = open + std::to_string(t.batch);
  for (auto d : t.spec.shape) s += ", " + std::to_string(d);
  return s + close;
}

std::string cpp_tensor(const TensorExample& t) {
  const std::string shape = dims(t, "{", "}");
  if (is_floating(t.spec.dtype)) {
    if (t.spec.has_range)
      return fmt::format("(torch::rand({}, {}) * {} + {})", shape, cpp_dtype(t.spec.dtype),
                         t.spec.high - t.spec.low, t.spec.low);
    return fmt::format("torch::randn({}, {})", shape, cpp_dtype(t.spec.dtype));
  }
  const auto low = static_cast<long long>(t.spec.has_range ? t.spec.low : 0);
  const auto high = static_cast<long long>(t.spec.has_range ? t.spec.high : 2);
  return fmt::format("torch::randint({}, {}, {}, {})", low, high, shape, cpp_dtype(t.spec.dtype));
}

std::string python_tensor(const TensorExample& t) {
  const std::string shape = dims(t, "(", ")");
  if (is_floating(t.spec.dtype)) {
    if (t.spec.has_range)
      return fmt::format("(torch.rand({}, dtype={}) * {} + {})", shape, python_dtype(t.spec.dtype),
                         t.spec.high - t.spec.low, t.spec.low);
    return fmt::format("torch.randn({}, dtype={})", shape, python_dtype(t.spec.dtype));
  }
  const auto low = static_cast<long long>(t.spec.has_range ? t.spec.low : 0);
  const auto high = static_cast<long long>(t.spec.has_range ? t.spec.high : 2);
  return fmt::format("torch.randint({}, {}, {}, dtype={})", low, high, shape,
                     python_dtype(t.spec.dtype));
}

// "Float[1,3,224,224]; Long[1,32]": the inputs as described when no spec was given (a file).
InputSpec spec_from_description(const std::string& description) {
  InputSpec spec;
  for (const auto& piece : split(description, ';')) {
    const auto open = piece.find('['), close = piece.find(']');
    if (open == std::string::npos || close == std::string::npos) continue;
    TensorSpec t;
    const std::string type = piece.substr(0, open);
    t.dtype = type == "Long" ? DType::kInt64 : type == "Int" ? DType::kInt32
            : type == "Double" ? DType::kFloat64 : type == "Half" ? DType::kFloat16
            : type == "BFloat16" ? DType::kBFloat16 : type == "Byte" ? DType::kUInt8
            : type == "Bool" ? DType::kBool : DType::kFloat32;
    const auto d = split(piece.substr(open + 1, close - open - 1), ',');
    for (std::size_t i = 1; i < d.size(); ++i) t.shape.push_back(std::stoll(d[i]));
    spec.tensors.push_back(t);
  }
  return spec;
}

// The first dimension of the first tensor in a description: the inputs file's batch.
std::int64_t description_batch(const std::string& description) {
  const auto open = description.find('['), comma = description.find_first_of(",]", open);
  if (open == std::string::npos || comma == std::string::npos) return 1;
  try {
    return std::max<std::int64_t>(1, std::stoll(description.substr(open + 1, comma - open - 1)));
  } catch (const std::exception&) {
    return 1;
  }
}

// The run's device: the one asked for, or CUDA when "auto" found a GPU.
std::string run_device(const RunResults& r) {
  const std::string device = string_field(r.experiment, "device", "auto");
  if (device != "auto") return device;
  const bool gpu = r.environment.is_object() && r.environment.contains("cuda_available") &&
                   r.environment.at("cuda_available").is_boolean() &&
                   r.environment.at("cuda_available").get<bool>();
  return gpu ? "cuda:0" : "cpu";
}

std::string model_file(const RunResults& r) {
  const std::string model = string_field(r.experiment, "model");
  return model.rfind("builtin:", 0) == 0 || model.empty() ? "model.pt" : model;
}

bool is_program_file(const std::string& file) {
  return file.size() > 4 && file.compare(file.size() - 4, 4, ".pt2") == 0;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A torch.export program's winner runs as the AOTInductor package torchperf compiled for it:
// the package the run's journal names (torchperf's cache), or one compiled the same way.
void write_program_snippets(const RunResults& r, const std::string& key, const std::string& why,
                            const std::vector<TensorExample>& tensors, ApplySnippets& s) {
  // The package the runtime says the point needs (its options name it in the journal).
  Artefact artefact = runtime_of_key(key).artefact(
      [&](const std::string& knob) { return knob_value(key, knob); }, WorkloadTraits{});
  if (artefact.package.precision != "bf16") artefact.package.precision = "fp32";
  const std::string precision = artefact.package.precision;
  const bool autotune = artefact.autotunes;
  const std::string options = artefact.package.to_string();
  const auto record = r.packages.find(options);
  const std::string package = record != r.packages.end() && !record->second.value("path", "").empty()
                                  ? record->second.value("path", "")
                                  : "package.pt2";
  const std::string threads = knob_value(key, "threads");
  const bool bf16 = precision == "bf16";
  std::string cpp = "// " + why + "\n";
  cpp += "// Build with CMake: find_package(Torch REQUIRED), then target_link_libraries(app "
         "${TORCH_LIBRARIES}).\n";
  cpp += "#include <ATen/Parallel.h>\n#include <ATen/cpu/Utils.h>\n"
         "#include <torch/csrc/inductor/aoti_package/model_package_loader.h>\n"
         "#include <torch/torch.h>\n#include <iostream>\n\nint main(int argc, char** argv) {\n";
  if (threads != "n/a") cpp += "  at::set_num_threads(" + threads + ");\n";
  // Linux lets a process use AMX tiles only once it has asked; a package may use them.
  cpp += "  at::cpu::init_amx();  // AMX tiles, where the CPU has them (else a SIGILL)\n";
  cpp += "  // The AOTInductor package torchperf compiled (" + options + "):\n";
  cpp += "  torch::inductor::AOTIModelPackageLoader loader(argc > 1 ? argv[1] : " + quote(package) +
         ");\n  std::vector<at::Tensor> inputs;\n";
  for (const auto& t : tensors)
    cpp += "  inputs.push_back(" + cpp_tensor(t) +
           (bf16 && is_floating(t.spec.dtype) ? ".to(torch::kBFloat16)" : "") + ");\n";
  cpp += "  std::vector<at::Tensor> outputs = loader.run(inputs);\n"
         "  std::cout << \"output \" << outputs.at(0).sizes() << \"\\n\";\n  return 0;\n}\n";
  s.cpp = cpp;
  std::string py = "# " + why.substr(0, why.find('\n')) + "\n#   " + key + "\nimport sys\n\nimport torch\n\n";
  if (threads != "n/a") py += "torch.set_num_threads(" + threads + ")\n";
  py += "# The package torchperf compiled; to compile it yourself from the program:\n";
  py += "#   program = torch.export.load(" + quote(model_file(r)) + ")\n";
  if (bf16)
    py += "#   program = torch.export.export(program.module().to(torch.bfloat16), <bf16 example "
          "inputs>, dynamic_shapes=<as exported>)\n";
  py += std::string("#   package = torch._inductor.aoti_compile_and_package(program, "
                    "inductor_configs={\"freezing\": True") +
        (autotune ? ", \"max_autotune\": True" : "") + "})\n";
  py += "model = torch._inductor.aoti_load_package(sys.argv[1] if len(sys.argv) > 1 else " +
        quote(package) + ")\ninputs = [\n";
  for (const auto& t : tensors)
    py += "    " + python_tensor(t) + (bf16 && is_floating(t.spec.dtype) ? ".to(torch.bfloat16)" : "") +
          ",\n";
  py += "]\noutput = model(*inputs)\nprint(\"output\", tuple(output[0].shape if isinstance(output, "
        "(list, tuple)) else output.shape))\n";
  s.python = py;
}

// Each knob's lines in the key's order; a runtime's own lines for a knob (ONNX Runtime's int8)
// last, as they act on what its graph's lines made.
std::vector<KnobCode> knob_codes(const std::string& key, bool cuda, std::int64_t& batch) {
  std::vector<KnobCode> codes, late;
  const Runtime& runtime = runtime_of_key(key);
  for (const auto& [knob, value] : key_knobs(key)) {
    if (knob == "batch") batch = std::stoll(value);
    if (const auto own = runtime.knob_snippet(knob, value))
      late.push_back(code_of(*own));
    else
      codes.push_back(find_knob(knob).code(value, cuda));
  }
  codes.insert(codes.end(), late.begin(), late.end());
  return codes;
}

// Worker knobs act before the program starts: the environment a user must set, one line.
std::string environment_of(const std::vector<KnobCode>& codes) {
  std::string env;
  for (const auto& c : codes)
    for (const auto& e : c.environment) env += (env.empty() ? "" : " ") + e;
  return env;
}

// The example inputs a snippet makes: the run's spec (or the file's description) at its batch,
// each named dimension at the --dim's typical length (issue 63: a stream's snippet fed (16, 0)).
std::vector<NamedDim> run_dims(const RunResults& r) {
  std::vector<NamedDim> dims;
  if (r.experiment.is_object() && r.experiment.contains("dims") &&
      r.experiment.at("dims").is_array())
    for (const auto& d : r.experiment.at("dims"))
      if (d.is_string()) dims.push_back(parse_dim_option(d.get<std::string>()));
  return dims;
}

std::vector<TensorExample> example_tensors(const RunResults& r, std::int64_t& batch) {
  InputSpec spec;
  const std::string source = r.input_source;
  if (!source.empty() && source.rfind("file:", 0) != 0)
    spec = parse_input_spec(source);
  else
    spec = spec_from_description(r.inputs);
  if (batch == 0) batch = description_batch(r.inputs);
  const auto typical = typical_sizes(run_dims(r), 0);
  std::vector<TensorExample> tensors;
  for (auto t : spec.tensors) {
    for (std::size_t d = 0; d < t.dim_names.size() && d < t.shape.size(); ++d) {
      if (t.dim_names[d].empty()) continue;
      t.shape[d] = 16;  // a named dimension without its --dim in the journal: a length that runs
      for (const auto& [name, size] : typical)
        if (name == t.dim_names[d]) t.shape[d] = size;
    }
    tensors.push_back({t, batch});
  }
  return tensors;
}

// A torch.export program whose winner is not a package (a Python runtime's) runs in C++ only as
// an AOTInductor package: the snippet says how to make one, not a torch::jit::load of the .pt2.
std::string program_cpp_snippet(const std::string& why, const std::string& file,
                                const std::vector<TensorExample>& tensors) {
  std::string cpp = "// " + why + "\n";
  cpp += "// The winner runs in Python. A torch.export program runs in C++ as an AOTInductor "
         "package; make one with\n//   python3 -c \"import torch; "
         "torch._inductor.aoti_compile_and_package(torch.export.load('" +
         file + "'), package_path='package.pt2')\"\n";
  cpp += "// Build with CMake: find_package(Torch REQUIRED), then target_link_libraries(app "
         "${TORCH_LIBRARIES}).\n";
  cpp += "#include <torch/csrc/inductor/aoti_package/model_package_loader.h>\n"
         "#include <torch/torch.h>\n#include <iostream>\n\nint main(int argc, char** argv) {\n"
         "  torch::inductor::AOTIModelPackageLoader loader(argc > 1 ? argv[1] : "
         "\"package.pt2\");\n  std::vector<at::Tensor> inputs;\n";
  for (const auto& t : tensors) cpp += "  inputs.push_back(" + cpp_tensor(t) + ");\n";
  cpp += "  std::vector<at::Tensor> outputs = loader.run(inputs);\n"
         "  std::cout << \"output \" << outputs.at(0).sizes() << \"\\n\";\n  return 0;\n}\n";
  return cpp;
}

// The TorchScript program: the model loaded, each knob's setup, the inputs, one call.
std::string torchscript_cpp_snippet(const RunResults& r, const std::string& why,
                                    const std::vector<KnobCode>& codes,
                                    const std::vector<TensorExample>& tensors, bool cuda,
                                    const std::string& device, std::int64_t batch) {
  const std::string env = environment_of(codes);
  std::set<std::string> includes = {"<torch/script.h>", "<iostream>"};
  for (const auto& c : codes) includes.insert(c.cpp_includes.begin(), c.cpp_includes.end());
  std::string cpp = "// " + why + "\n";
  cpp += "// Build with CMake: find_package(Torch REQUIRED), then target_link_libraries(app "
         "${TORCH_LIBRARIES}).\n";
  if (!env.empty()) cpp += "// Run with this environment (it must be set before the program starts):\n//   " + env + " ./app\n";
  for (const auto& inc : includes) cpp += "#include " + inc + "\n";
  for (const auto& c : codes)
    for (const auto& l : c.cpp_declarations) cpp += l + "\n";
  cpp += "\nint main(int argc, char** argv) {\n";
  cpp += "  torch::jit::Module module = torch::jit::load(argc > 1 ? argv[1] : " +
         quote(model_file(r)) + ");\n";
  if (cuda) cpp += "  const torch::Device device(" + quote(device) + ");\n  module.to(device);\n";
  for (const auto& c : codes)
    for (const auto& l : c.cpp_setup) cpp += (l.rfind("#", 0) == 0 ? "" : "  ") + l + "\n";
  cpp += fmt::format("  // Example inputs, batch {}: replace them with yours.\n", batch);
  cpp += "  std::vector<torch::jit::IValue> inputs;\n";
  for (const auto& t : tensors) {
    std::string expr = cpp_tensor(t) + (cuda ? ".to(device)" : "");
    for (const auto& c : codes)
      if (!c.cpp_tensor.empty() && is_floating(t.spec.dtype) &&
          (!c.only_4d || t.spec.shape.size() == 3))
        expr += c.cpp_tensor;
    cpp += "  inputs.push_back(" + expr + ");\n";
  }
  cpp += "  {\n";
  for (const auto& c : codes)
    if (!c.cpp_guard.empty()) cpp += "    " + c.cpp_guard + "\n";
  cpp += "    torch::jit::IValue output = module.forward(inputs);\n";
  cpp += "    if (output.isTensor()) std::cout << \"output \" << output.toTensor().sizes() << \"\\n\";\n";
  cpp += "  }\n  return 0;\n}\n";
  return cpp;
}

// The padding and batching a tune over a stream of lengths crowned, as Python a user copies: the
// policy's own rule (stream_policy.py's, written out for this winner's values), and batches() that
// cuts samples of varying length into the batches it measured. "" for a tune of one shape.
std::string python_policy(const std::string& key, const std::vector<TensorExample>& tensors,
                          const std::vector<NamedDim>& dims) {
  if (dims.empty()) return "";
  const std::string padding = knob_value(key, "padding");
  const std::string batching = knob_value(key, "batching");
  const std::string batch = knob_value(key, "batch");
  std::string varying;  // per input, the dimensions of a sample (no batch) that vary
  for (const auto& t : tensors) {
    std::string mine;
    for (std::size_t d = 0; d < t.spec.dim_names.size(); ++d)
      if (!t.spec.dim_names[d].empty()) mine += (mine.empty() ? "" : ", ") + std::to_string(d);
    varying += (varying.empty() ? "[" : ", [") + mine + "]";
  }
  const std::int64_t longest = dims.front().distribution.max;
  std::string py = "\n\n# The padding and batching the tune crowned (padding=" + padding +
                   ", batching=" + batching + ", batch " + batch + ", " + dims.front().name +
                   " up to " + std::to_string(longest) +
                   "): feed samples of varying length through batches(), each batch's inputs to "
                   "run().\n";
  py += "BATCH = " + (batch == "n/a" ? std::string("8") : batch) + "\n";
  py += "LONGEST = " + std::to_string(longest) + "\n";
  py += "VARYING = [" + varying + "]  # per input, the dimensions of a sample that vary\n";
  if (padding.rfind("buckets:", 0) == 0) {
    std::string edges = padding.substr(8);
    std::replace(edges.begin(), edges.end(), '/', ',');
    py += "EDGES = [" + edges + "]\n\n\ndef padded(n):\n"
          "    \"\"\"The length a batch whose longest sample is n long is padded to.\"\"\"\n"
          "    return min(next((e for e in EDGES if e >= n), n), LONGEST)\n";
  } else if (padding.rfind("multiple:", 0) == 0) {
    py += "\n\ndef padded(n):\n"
          "    \"\"\"The length a batch whose longest sample is n long is padded to.\"\"\"\n"
          "    return min(-(-n // " + padding.substr(9) + ") * " + padding.substr(9) +
          ", max(n, LONGEST))\n";
  } else if (padding == "max") {
    py += "\n\ndef padded(n):\n    return max(n, LONGEST)\n";
  } else {
    py += "\n\ndef padded(n):\n    return n  # padding=batch-max: the batch's longest\n";
  }
  const std::string window = batching.rfind("sorted:", 0) == 0 ? batching.substr(7) : "0";
  py += "\n\ndef batches(samples):\n"
        "    \"\"\"Samples (tuples of tensors in forward's order, without the batch dimension) as "
        "the tune batched\n    them: yields (indices, inputs), each batch's samples and its inputs, "
        "padded with zeros.\"\"\"\n"
        "    order = list(range(len(samples)))\n"
        "    window = " + window + "  # batching=" + batching + "\n"
        "    if window:\n"
        "        length = lambda i: samples[i][0].shape[VARYING[0][0]] if VARYING[0] else 0\n"
        "        order = [i for s in range(0, len(order), window)\n"
        "                 for i in sorted(order[s:s + window], key=length)]\n"
        "    for start in range(0, len(order), BATCH):\n"
        "        taken = order[start:start + BATCH]\n"
        "        inputs = []\n"
        "        for k, dims in enumerate(VARYING):\n"
        "            parts = [samples[i][k] for i in taken]\n"
        "            for d in dims:\n"
        "                n = padded(max(p.shape[d] for p in parts))\n"
        "                parts = [torch.cat([p, p.new_zeros(p.shape[:d] + (n - p.shape[d],) + "
        "p.shape[d + 1:])], d)\n"
        "                         for p in parts]\n"
        "            inputs.append(torch.stack(parts))\n"
        "        yield taken, inputs\n";
  return py;
}

std::string python_snippet(const RunResults& r, const std::string& key, const std::string& why,
                           const std::string& evidence, const std::vector<KnobCode>& codes,
                           const std::vector<TensorExample>& tensors, bool cuda,
                           const std::string& device, std::int64_t batch,
                           const std::vector<NamedDim>& dims) {
  const std::string env = environment_of(codes);
  std::string py = "# " + why.substr(0, why.find('\n')) + "\n#   " + key + "\n#   " + evidence +
                   "\n" +
                   (env.empty() ? std::string()
                                : "# Run with this environment (it must be set before Python starts):\n#   " +
                                      env + " python3 this_script.py\n") +
                   "import sys\n\nimport torch\n\n";
  const std::string file = model_file(r);
  if (is_program_file(file)) {
    // A torch.export program as tune exported it (its batch and named dimensions dynamic): in
    // Python its module, or the caller's own nn.Module (what the python runtime timed when the
    // tune started from Python); an engine converts the program itself.
    py += "# The program as tune exported it (its batch and named dimensions dynamic). Your own "
          "nn.Module runs\n# the same way (eval()) as `model`:\n";
    py += "program = torch.export.load(sys.argv[1] if len(sys.argv) > 1 else " + quote(file) +
          ")\nmodel = program.module()\n";
  } else {
    py += "model = torch.jit.load(sys.argv[1] if len(sys.argv) > 1 else " + quote(file) + ")\n";
  }
  if (cuda) py += "device = torch.device(" + quote(device) + ")\nmodel = model.to(device)\n";
  std::string shapes = fmt::format("batch {}", batch);
  for (const auto& d : dims)
    shapes += fmt::format(", {} {} (its typical length)", d.name, typical_sizes({d}, 0).front().second);
  std::string takes = "any batch";
  for (const auto& d : dims)
    takes += fmt::format(" and {} from {} to {}", d.name, d.distribution.min, d.distribution.max);
  py += "# Example inputs, " + shapes + ", as you hold them: the winner takes " + takes +
        ".\ninputs = [\n";
  for (const auto& t : tensors) py += "    " + python_tensor(t) + (cuda ? ".to(device)" : "") + ",\n";
  py += "]\n";
  for (const auto& c : codes)  // after the inputs: int8-static's setup calibrates on them
    for (const auto& l : c.python_setup) py += l + "\n";
  py += "\n\ndef run(*inputs):\n"
        "    \"\"\"The winner's call on inputs as you hold them: converted and run as tune measured "
        "it.\"\"\"\n";
  for (const auto& c : codes)
    if (!c.python_tensor.empty())
      py += "    inputs = [x" + c.python_tensor + " if x.is_floating_point()" +
            (c.only_4d ? " and x.dim() == 4" : "") + " else x for x in inputs]\n";
  std::string with;
  for (const auto& c : codes)
    if (!c.python_with.empty()) with += (with.empty() ? "" : ", ") + c.python_with;
  if (with.empty())
    py += "    return model(*inputs)\n";
  else
    py += "    with " + with + ":\n        return model(*inputs)\n";
  py += python_policy(key, tensors, dims);
  py += "\n\noutput = run(*inputs)\n";
  py += "if isinstance(output, torch.Tensor):\n    print(\"output\", tuple(output.shape))\n";
  return py;
}

// What serve needs of the tune besides the configuration (issue 84): the --dim, the caller's
// module, the calibration, and the winner's figures as tuned (its last full measurement, else its
// brief one) for the start-up line to compare with.
void describe_tuned(const RunResults& r, const std::string& key, ConfigurationFile& file) {
  if (r.experiment.contains("dims") && r.experiment.at("dims").is_array())
    for (const auto& d : r.experiment.at("dims"))
      if (d.is_string()) file.dims.push_back(d.get<std::string>());
  file.python_module = string_field(r.experiment, "python_module");
  file.calibration_file = string_field(r.experiment, "calibration_file");
  const PointResult* best = nullptr;
  for (const auto& p : r.points)
    if (p.key == key && p.status == PointStatus::kOk && (!best || best->brief || !p.brief))
      best = &p;
  if (!best) return;
  const PointMetrics& m = best->metrics;
  file.tuned.samples_per_s = m.throughput;
  file.tuned.low = m.throughput_low;
  file.tuned.high = m.throughput_high;
  file.tuned.tokens_per_s = std::isfinite(m.tokens_per_s) ? m.tokens_per_s : 0;
  // A call, in the configuration's batch (issue 84: a stream's point reads a pass over its
  // samples as one call, 512 at 876 ms): a pass's median over its batches, on average.
  const std::string batch = knob_value(key, "batch");
  file.tuned.batch = m.batch;
  file.tuned.latency_p50_ms = m.latency_p50_ms;
  if (batch != "n/a" && std::all_of(batch.begin(), batch.end(), ::isdigit) &&
      std::stoll(batch) > 0 && std::stoll(batch) < m.batch) {
    file.tuned.batch = std::stoll(batch);
    file.tuned.latency_p50_ms = m.latency_p50_ms * static_cast<double>(file.tuned.batch) /
                                static_cast<double>(m.batch);
    file.tuned.batching = knob_value(key, "batching");
  }
}

}  // namespace

ApplySnippets make_apply_snippets(const RunAnalysis& a) {
  if (!a.winner) throw UsageError("run '" + a.run.label + "' has no winner to apply");
  const RunResults& r = a.run;
  const std::string& key = *a.winner;
  const std::string device = run_device(r);
  const bool cuda = device.rfind("cuda", 0) == 0;
  ApplySnippets s;
  std::int64_t batch = 0;  // 0: the batch knob did not apply (inputs from a file)
  std::vector<KnobCode> codes;
  try {
    s.config.configuration = Configuration::parse(key);
    codes = knob_codes(key, cuda, batch);
  } catch (const std::exception& e) {
    throw ResultsError("results file '" + r.journal + "': the winner '" + key +
                       "' is not a configuration this torchperf knows (" + e.what() + ")");
  }
  s.config.model = string_field(r.experiment, "model");
  s.config.input_spec = string_field(r.experiment, "input_spec");
  s.config.device = string_field(r.experiment, "device", "auto");
  s.config.source = r.journal;
  s.config.evidence = a.winner_evidence;
  describe_tuned(r, key, s.config);
  s.config_json = to_json(s.config).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  s.python_first = runtime_of_key(key).worker() == RuntimeWorker::kPython;
  const std::vector<TensorExample> tensors = example_tensors(r, batch);
  const std::string why =
      fmt::format("Runs the model as torchperf found fastest ({}), from {}:\n//   {}\n//   {}",
                  r.label, r.journal, key, a.winner_evidence);
  if (runtime_of_key(key).artefact([&](const std::string& knob) { return knob_value(key, knob); },
                                   WorkloadTraits{})
          .kind == ArtefactKind::kPackage) {
    write_program_snippets(r, key, why, tensors, s);
    return s;
  }
  s.cpp = is_program_file(model_file(r))
              ? program_cpp_snippet(why, model_file(r), tensors)
              : torchscript_cpp_snippet(r, why, codes, tensors, cuda, device, batch);
  s.python = python_snippet(r, key, why, a.winner_evidence, codes, tensors, cuda, device, batch,
                            run_dims(r));
  return s;
}

}  // namespace torchperf
