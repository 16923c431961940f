#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "torchperf/compat/torch_compat.h"
#include "torchperf/config/knob.h"
#include "torchperf/error.h"
#include "torchperf/models/exported_model.h"
#include "torchperf/models/graph_rewrites.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/models/quantize.h"
#include "torchperf/models/workload.h"
#include "torchperf/runtime/cuda_graph_model.h"
#include "torchperf/runtime/runtime.h"
#include "process_knobs.h"
#include "runtime_knob.h"
#include "training_scale_knobs.h"

namespace torchperf {
namespace {

Applicability always(const WorkloadTraits&, const std::string&) { return Applicability::yes(); }

Applicability cuda_only(const WorkloadTraits& t, const std::string& what) {
  return t.cuda ? Applicability::yes() : Applicability::no(what + " exists only on CUDA devices");
}

// Holds an RAII guard on the heap until the returned Undo runs (LIFO with the other knobs).
template <typename Guard, typename... Args>
Undo hold(Args... args) {
  auto guard = std::make_shared<std::unique_ptr<Guard>>(std::make_unique<Guard>(args...));
  return [guard] { guard->reset(); };
}

compat::DeviceKind device_kind(const Workload& w) {
  return w.device.is_cuda() ? compat::DeviceKind::kCuda : compat::DeviceKind::kCpu;
}

void convert_floating_inputs(Workload& w, c10::ScalarType dtype) {
  for (auto& v : w.inputs)
    if (v.isTensor() && at::isFloatingType(v.toTensor().scalar_type())) v = v.toTensor().to(dtype);
}

void set_param_memory_format(torch::jit::Module& module, at::MemoryFormat format) {
  for (const auto& p : module.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(format));
  for (const auto& b : module.buffers())
    if (b.dim() == 4) b.set_data(b.contiguous(format));
}

Knob threads_knob() {
  Knob k;
  k.name = "threads";
  k.description =
      "intra-op threads (at::set_num_threads); process-wide, set once before warm-up";
  k.scope = KnobScope::kProcess;
  k.training = true;
  k.integer_valued = true;
  k.plan = [](const std::string& value, TrainingPlan& p) { p.threads = std::stoi(value); };
  k.values = [](const WorkloadTraits& t) {
    std::vector<std::string> v;
    for (int n = 1; n <= std::max(1, t.usable_cores); n *= 2) v.push_back(std::to_string(n));
    if (v.back() != std::to_string(t.usable_cores) && t.usable_cores > 1)
      v.push_back(std::to_string(t.usable_cores));
    return v;
  };
  k.baseline = [](const WorkloadTraits& t) { return std::to_string(t.default_threads); };
  k.expert = [](const WorkloadTraits& t) {
    return std::vector<std::string>{std::to_string(t.usable_cores)};
  };
  // On a GPU the host threads only launch kernels: their count moved ResNet-18 by ±2% on an H100
  // (noise), so a sweep keeps LibTorch's own count.
  k.left_out_of_sweep = [](const WorkloadTraits& t, const std::string& value) {
    if (!t.cuda || value == std::to_string(t.default_threads)) return std::string();
    return std::string("on a CUDA device the GPU does the work: one thread count (LibTorch's ") +
           std::to_string(t.default_threads) + ")";
  };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    return at_most_four_per_core(t, value, "threads");
  };
  k.enter = [](const std::string& value, const Workload&) -> Undo {
    const int previous = at::get_num_threads();
    at::set_num_threads(std::stoi(value));
    return [previous] { at::set_num_threads(previous); };
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    c.cpp_includes = {"<ATen/Parallel.h>"};
    c.cpp_setup = {"at::set_num_threads(" + value + ");"};
    c.python_setup = {"torch.set_num_threads(" + value + ")"};
    return c;
  };
  return k;
}

// What a value asks of the user's own code, said as a comment in the snippets (C++ and Python)
// where torchperf writes no code for it.
KnobCode said_in_user_code(const std::string& how) {
  KnobCode c;
  c.cpp_setup = {"// " + how};
  c.python_setup = {"# " + how};
  return c;
}

Knob batch_knob() {
  Knob k;
  k.name = "batch";
  k.description = "samples per forward call (the batch dimension prepended to the input spec)";
  k.training = true;
  k.changes_training = true;
  k.plan = [](const std::string& value, TrainingPlan& p) { p.batch = std::stoll(value); };
  k.integer_valued = true;
  k.values = [](const WorkloadTraits&) { return fixed({"1", "8", "32"}); };
  k.baseline = [](const WorkloadTraits& t) { return std::to_string(t.default_batch); };
  k.expert = [](const WorkloadTraits&) { return fixed({"64", "32", "16", "8"}); };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (t.inputs_from_file)
      return Applicability::no("inputs come from --inputs-file, whose batch is fixed at " +
                               std::to_string(t.default_batch));
    if (!t.exported_program) return Applicability::yes();
    const long long n = std::stoll(value);
    if (!t.dynamic_batch && n != t.default_batch)
      return Applicability::no("the program was exported with a static batch of " +
                               std::to_string(t.default_batch) + " (" + t.exported_shape +
                               "); export it with a dynamic batch (torch.export.Dim) to vary it");
    if (t.dynamic_batch && (n < t.batch_min || (t.batch_max > 0 && n > t.batch_max)))
      return Applicability::no("outside the batch range the program was exported with (" +
                               t.exported_shape + ")");
    return Applicability::yes();
  };
  k.prepare = [](const std::string& value, Workload& w) {
    if (!w.spec) return;
    if (w.stream_recipe) {  // its batches are built from the configuration's policy (finish_stream)
      w.inputs = typical_inputs(*w.stream_recipe, std::stoll(value));
      for (auto& v : w.inputs) v = v.toTensor().to(w.device);
      return;
    }
    w.inputs = make_inputs(*w.spec, std::stoll(value), w.seed);
    for (auto& v : w.inputs) v = v.toTensor().to(w.device);
  };
  return k;
}

// The stream's knobs (issue 52) apply only where a named dimension varies (a runtime that cannot
// take varying sizes refuses the workload itself).
Applicability applies_to_varying_shapes(const WorkloadTraits& t) {
  if (t.named_dims.empty())
    return Applicability::no("no input dimension varies (name one in --input, e.g. "
                             "int64:S@0..30522, and give --dim S=...)");
  return Applicability::yes();
}

Knob padding_knob() {
  Knob k;
  k.name = "padding";
  k.description =
      "what a batch's named dimensions are padded up to: its longest sample (batch-max), that "
      "rounded up to a multiple (multiple:M), the first bucket edge that holds it (buckets:E1/E2/"
      "...), or the longest length there is (max)";
  k.values = [](const WorkloadTraits& t) {
    std::vector<std::string> v{"batch-max", "multiple:64"};
    if (!t.suggested_buckets.empty()) v.push_back(t.suggested_buckets);
    v.push_back("max");
    return v;
  };
  k.check_form = [](const std::string& value) { parse_padding(value); };
  k.baseline = [](const WorkloadTraits&) { return "batch-max"; };
  // 001 and 004: bucket sequences of similar length, so that few shapes waste little compute.
  k.expert = [](const WorkloadTraits& t) {
    return t.suggested_buckets.empty() ? std::vector<std::string>{}
                                       : std::vector<std::string>{t.suggested_buckets};
  };
  k.listed_at_baseline = false;  // configurations of fixed shapes keep their names
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return applies_to_varying_shapes(t);
  };
  // The policy lives in the caller's collate function, which torchperf does not write yet.
  k.code = [](const std::string& value, bool /*cuda*/) {
    const PaddingPolicy p = parse_padding(value);
    const std::string target =
        p.kind == PaddingPolicy::Kind::kBuckets    ? "the first of these edges that holds its longest sample: " + value.substr(8)
        : p.kind == PaddingPolicy::Kind::kMultiple ? "its longest sample rounded up to a multiple of " + std::to_string(p.multiple)
        : p.kind == PaddingPolicy::Kind::kMax      ? "the longest length there is"
                                                   : "its longest sample";
    return said_in_user_code("padding=" + value + ": in your collate function, pad each "
                             "batch's varying dimension with 0 up to " + target +
                             " (the attention mask 0 there)");
  };
  return k;
}

Knob batching_knob() {
  Knob k;
  k.name = "batching";
  k.description =
      "how arriving samples become batches: in arrival order, or each window of W sorted by "
      "length first (sorted:W; a sample waits for its window)";
  k.values = [](const WorkloadTraits&) { return fixed({"arrival", "sorted:64", "sorted:256"}); };
  k.check_form = [](const std::string& value) { parse_batching(value); };
  k.baseline = [](const WorkloadTraits&) { return "arrival"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"sorted:256"}); };
  k.listed_at_baseline = false;
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return applies_to_varying_shapes(t);
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    if (value == "arrival") return KnobCode{};
    return said_in_user_code("batching=" + value + ": sort each window of " + value.substr(7) +
                             " requests by length before cutting it into batches");
  };
  return k;
}

Knob mode_knob() {
  Knob k;
  k.name = "mode";
  k.description = "the module's training flag (eval() / train()): dropout, batch-norm statistics";
  k.values = [](const WorkloadTraits&) { return fixed({"eval", "train"}); };
  k.baseline = [](const WorkloadTraits& t) { return t.saved_training ? "train" : "eval"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"eval"}); };
  // Dropout and batch statistics in an inference tune are a setting no one serves with.
  k.left_out_of_sweep = [](const WorkloadTraits&, const std::string& value) {
    return value == "train" ? std::string("an inference tune measures eval mode") : std::string();
  };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    if (t.exported_program)
      return Applicability::no("a torch.export program keeps the mode it was exported in");
    return t.can_train_mode ? Applicability::yes()
                            : Applicability::no("the model has no training flag");
  };
  k.prepare = [](const std::string& value, Workload& w) {
    w.model->set_training(value == "train");
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    c.cpp_setup = {value == "train" ? "module.train();" : "module.eval();"};
    c.python_setup = {value == "train" ? "model.train()" : "model.eval()"};
    return c;
  };
  return k;
}

Knob grad_knob() {
  Knob k;
  k.name = "grad";
  k.description = "autograd around each call: on, torch::NoGradGuard, or c10::InferenceMode";
  k.values = [](const WorkloadTraits&) { return fixed({"on", "no_grad", "inference"}); };
  k.baseline = [](const WorkloadTraits&) { return "on"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"inference", "no_grad"}); };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return t.exported_program ? Applicability::no("an AOTInductor package runs without autograd")
                              : Applicability::yes();
  };
  k.enter = [](const std::string& value, const Workload&) -> Undo {
    if (value == "no_grad") return hold<torch::NoGradGuard>();
    if (value == "inference") return hold<c10::InferenceMode>();
    return hold<torch::AutoGradMode>(true);  // "on" is explicit: the caller's mode must not leak in
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (value == "no_grad") {
      c.cpp_includes = {"<c10/core/GradMode.h>"};  // <torch/script.h> does not reach torch::NoGradGuard
      c.cpp_guard = "c10::NoGradGuard no_grad;";
      c.python_with = "torch.no_grad()";
    } else if (value == "inference") {
      c.cpp_includes = {"<c10/core/InferenceMode.h>"};
      c.cpp_guard = "c10::InferenceMode inference_mode;";
      c.python_with = "torch.inference_mode()";
    }
    return c;
  };
  return k;
}

// The lines that apply a precision in user code: int8 quantized in Python, converted weights
// and inputs, or autocast around each call.
KnobCode precision_code(const std::string& value, bool cuda) {
  KnobCode c;
  const bool bf16 = value.rfind("bf16", 0) == 0;
  const std::string cpp_type = bf16 ? "at::kBFloat16" : "at::kHalf";
  const std::string py_type = bf16 ? "torch.bfloat16" : "torch.float16";
  if (value == "int8-dynamic") {
    // LibTorch has no one-call dynamic quantization in C++: the Python call, and for C++ the
    // file it writes (torch.jit.save), loaded as any TorchScript model.
    c.cpp_setup = {"// int8-dynamic: load the file quantized in Python (torch.ao.quantization."
                   "quantize_dynamic_jit, per_channel_dynamic_qconfig), or torchperf lint --fix's"};
    c.python_setup = {"model = torch.ao.quantization.quantize_dynamic_jit(model, "
                      "{\"\": torch.ao.quantization.per_channel_dynamic_qconfig})",
                      "# (it quantizes Linear layers; for LSTM/GRU, quantize_dynamic the eager "
                      "model before scripting it, or load torchperf lint --fix's file)"};
    return c;
  }
  if (value == "int8-static") {
    // PT2E as python/torchperf/int8.py applies it, calibrated on the example inputs (the
    // snippet's inputs come before its setup); Inductor, with freezing, lowers it to int8.
    c.cpp_setup = {"// int8-static is PT2E in Python (torchao): the Python snippet applies it"};
    c.python_setup = {
        "from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e",
        "from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86",
        "from torchperf.int8 import split_shared_module_calls",
        "graph = torch.export.export(model, tuple(inputs)).module()  # model: in eval mode",
        "split_shared_module_calls(graph)  # a module called twice (ResNet's ReLU): one source per call",
        "quantizer = x86.X86InductorQuantizer().set_global("
        "x86.get_default_x86_inductor_quantization_config())",
        "model = prepare_pt2e(graph, quantizer)",
        "model(*inputs)  # calibration: run your real samples here, batch by batch",
        "model = convert_pt2e(model)"};
    return c;
  }
  if (value == "int8-weight-only" || value == "int8-dynamic-activation") {
    const std::string config = value == "int8-weight-only"
                                   ? "Int8WeightOnlyConfig"
                                   : "Int8DynamicActivationInt8WeightConfig";
    c.cpp_setup = {"// " + value + " is torchao's quantize_ in Python: the Python snippet applies it"};
    c.python_setup = {"from torchao.quantization import quantize_, " + config,
                      "quantize_(model, " + config + "())  # your nn.Module's Linear layers"};
    return c;
  }
  if (value == "bf16" || value == "fp16") {
    c.cpp_setup = {"module.to(" + cpp_type + ");"};
    c.python_setup = {"model = model.to(" + py_type + ")"};
    c.cpp_tensor = ".to(" + cpp_type + ")";
    c.python_tensor = ".to(" + py_type + ")";
  } else if (value != "fp32") {
    // Autocast acts on the device the model runs on. It is thread-local state: set once, it
    // covers every later call on this thread, as the `with` block does in Python.
    const std::string dev = cuda ? "CUDA" : "CPU";
    c.cpp_includes = {"<ATen/autocast_mode.h>", "<torch/version.h>"};
    c.cpp_setup = {
        "#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)",
        "at::autocast::set_autocast_enabled(at::k" + dev + ", true);",
        "at::autocast::set_autocast_dtype(at::k" + dev + ", " + cpp_type + ");",
        "#else",
        cuda ? "at::autocast::set_enabled(true);" : "at::autocast::set_cpu_enabled(true);",
        (cuda ? "at::autocast::set_autocast_gpu_dtype(" : "at::autocast::set_autocast_cpu_dtype(") +
            cpp_type + ");",
        "#endif"};
    c.python_with = std::string("torch.autocast(\"") + (cuda ? "cuda" : "cpu") +
                    "\", dtype=" + py_type + ")";
  }
  return c;
}

Knob precision_knob() {
  Knob k;
  k.name = "precision";
  k.description =
      "fp32; bf16-autocast / fp16-autocast (autocast around each call); bf16 / fp16 (weights and "
      "floating inputs converted); int8-dynamic (Linear weights int8 per channel, activations "
      "quantized per batch; LSTM and GRU too; LibTorch's quantized tensors, which PyTorch 2.x "
      "deprecates and 2.13 still runs); runtime=python: int8-static (PT2E, X86InductorQuantizer "
      "calibrated on the inputs, lowered by Inductor), int8-weight-only and "
      "int8-dynamic-activation (torchao's quantize_ on nn.Linear); runtime=onnxruntime: "
      "int8-static (QDQ calibrated on the inputs, which runtime=openvino runs too) and int8-dynamic "
      "(onnxruntime.quantization)";
  // int8 is swept by default where Linear layers carry the work (no convolutions): in a CNN the
  // classifier's few FLOPs cannot pay for quantizing each batch. Any model with Linear layers
  // may ask for it.
  k.values = [](const WorkloadTraits& t) {
    if (t.exported_program) return fixed({"fp32", "bf16"});
    if (t.cuda) return fixed({"fp32", "bf16-autocast", "bf16", "fp16-autocast", "fp16"});
    if (t.linear && !t.convolutional) return fixed({"fp32", "bf16-autocast", "bf16", "int8-dynamic"});
    return fixed({"fp32", "bf16-autocast", "bf16"});
  };
  k.baseline = [](const WorkloadTraits&) { return "fp32"; };
  k.left_out_of_sweep = [](const WorkloadTraits& t, const std::string& value) {
    // Measured, not assumed, when asked for: static int8 ran 3-4x fp32 on ResNet-18 here and
    // 0.5x eager on a small MLP, whose matmuls cannot pay for quantizing each activation.
    if (value == "int8-static" && !t.convolutional)
      return std::string("without convolutions PT2E's int8 paid nowhere measured (0.5x eager on "
                         "an MLP)");
    if (value != "int8-weight-only" && value != "int8-dynamic-activation") return std::string();
    return std::string("torchao's quantize_ replaces nn.Linear modules, which a torch.export "
                       "program does not keep: asked for, on a module (--from-python, "
                       "torchperf.tune(module))");
  };
  k.expert = [](const WorkloadTraits& t) {
    if (t.exported_program) return fixed({"bf16"});
    if (t.cuda) return fixed({"fp16-autocast", "bf16-autocast"});
    if (t.linear && !t.convolutional) return fixed({"bf16-autocast", "int8-dynamic"});
    return fixed({"bf16-autocast"});
  };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    // PT2E's, torchao's and the engines' int8 exist in Python only.
    if (value == "int8-static" || value == "int8-weight-only" || value == "int8-dynamic-activation")
      return Applicability::no("precision=" + value + " is applied in Python (PT2E or torchao): "
                               "runtime=python" +
                               (value == "int8-static" ? ", onnxruntime or openvino" : ""));
    // A program's precision is compiled in: the program is cast and exported again
    // (python/torchperf/aoti_compile.py says why autocast is not).
    if (t.exported_program && value != "fp32" && value != "bf16")
      return Applicability::no("a torch.export program is compiled in fp32 or bf16 (cast); "
                               "autocast does not survive exporting it again");
    if (value.rfind("fp16", 0) == 0) return cuda_only(t, "precision=" + value);
    if (value == "int8-dynamic") {
      if (t.cuda) return Applicability::no("LibTorch's quantized operators run on the CPU only");
      if (!t.torchscript) return Applicability::no("needs a TorchScript graph");
      if (!t.linear) return Applicability::no("the model has no Linear, LSTM or GRU layers (aten::linear, lstm, gru)");
      if (compat::quantized_engines().empty())
        return Applicability::no("this LibTorch was built without a quantized engine");
    }
    return Applicability::yes();
  };
  k.prepare = [](const std::string& value, Workload& w) {
    if (value == "int8-dynamic") {
      // A fresh clone: the loaded module's executors keep the graph they first ran.
      auto* ts = w.model->as_torchscript();
      torch::jit::Module q = ts->module().clone();
      quantize_linear_dynamic(q);
      ts->replace(std::move(q));
      return;
    }
    if (value != "bf16" && value != "fp16") return;
    const auto dtype = value == "bf16" ? at::kBFloat16 : at::kHalf;
    w.model->to(dtype);
    convert_floating_inputs(w, dtype);
  };
  k.enter = [](const std::string& value, const Workload& w) -> Undo {
    if (value != "bf16-autocast" && value != "fp16-autocast") return [] {};
    const auto device = device_kind(w);
    const bool was_enabled = compat::autocast_enabled(device);
    const std::string previous_dtype = compat::autocast_dtype(device);
    compat::set_autocast(device, true, value == "bf16-autocast" ? "bfloat16" : "float16");
    return [device, was_enabled, previous_dtype] {
      compat::set_autocast(device, was_enabled, previous_dtype);
      compat::clear_autocast_cache();
    };
  };
  k.code = precision_code;
  return k;
}

Knob qengine_knob() {
  Knob k;
  k.name = "qengine";
  k.description =
      "the quantized engine int8 runs on (at::globalContext().setQEngine): fbgemm, qnnpack, "
      "onednn (x86 from LibTorch 2.0), as built; set before the weights are packed";
  k.scope = KnobScope::kProcess;
  k.swept_by_default = never_swept;  // matters only with precision=int8-dynamic: --space names it
  k.listed_at_baseline = false;
  k.values = [](const WorkloadTraits&) { return compat::quantized_engines(); };
  k.baseline = [](const WorkloadTraits&) {
    static const std::string at_start_up = compat::quantized_engine();
    return at_start_up;
  };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (t.cuda) return Applicability::no("LibTorch's quantized operators run on the CPU only");
    if (!t.linear) return Applicability::no("the model has no Linear, LSTM or GRU layers to quantize");
    const auto built = compat::quantized_engines();
    if (std::find(built.begin(), built.end(), value) == built.end())
      return Applicability::no("this LibTorch was built without the " + value + " engine");
    return Applicability::yes();
  };
  // Packing happens in precision's prepare, which comes after this one in registry order.
  k.prepare = [](const std::string& value, Workload&) { compat::set_quantized_engine(value); };
  k.enter = [](const std::string& value, const Workload&) -> Undo {
    const std::string previous = compat::quantized_engine();
    compat::set_quantized_engine(value);
    return [previous] { compat::set_quantized_engine(previous); };
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    c.cpp_includes = {"<ATen/Context.h>"};
    std::string upper = value;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    c.cpp_setup = {"at::globalContext().setQEngine(at::QEngine::" + upper + ");"};
    c.python_setup = {"torch.backends.quantized.engine = \"" + value + "\""};
    return c;
  };
  return k;
}

Knob format_knob() {
  Knob k;
  k.name = "format";
  k.description = "memory format of 4-D weights and inputs, converted together (contiguous = NCHW)";
  k.training = true;
  k.plan = [](const std::string& value, TrainingPlan& p) {
    p.channels_last = value == "channels_last";
  };
  k.values = [](const WorkloadTraits&) { return fixed({"contiguous", "channels_last"}); };
  k.baseline = [](const WorkloadTraits&) { return "contiguous"; };
  k.expert = [](const WorkloadTraits& t) {
    return t.convolutional ? fixed({"channels_last"}) : fixed({});
  };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    if (!t.convolutional) return Applicability::no("the model has no 2-D convolutions");
    if (!t.image_input) return Applicability::no("no input is a 4-D floating tensor");
    if (!t.torchscript) return Applicability::no("needs a TorchScript model");
    return Applicability::yes();
  };
  k.prepare = [](const std::string& value, Workload& w) {
    if (value != "channels_last") return;
    set_param_memory_format(w.model->as_torchscript()->module(), at::MemoryFormat::ChannelsLast);
    for (auto& v : w.inputs)
      if (v.isTensor() && v.toTensor().dim() == 4)
        v = v.toTensor().contiguous(at::MemoryFormat::ChannelsLast);
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (value != "channels_last") return c;
    c.cpp_setup = {"for (const auto& p : module.parameters())",
                   "  if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));",
                   "for (const auto& b : module.buffers())",
                   "  if (b.dim() == 4) b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));"};
    c.python_setup = {"model = model.to(memory_format=torch.channels_last)"};
    c.cpp_tensor = ".contiguous(at::MemoryFormat::ChannelsLast)";
    c.python_tensor = ".contiguous(memory_format=torch.channels_last)";
    c.only_4d = true;
    return c;
  };
  return k;
}

// A rewrite of the model is not a line of user code: the snippet says how to get it instead.
KnobCode rewrite_in_user_code(const std::string& what) {
  return said_in_user_code(
      what + " (torchperf lint names them), or load the file torchperf lint --fix writes");
}

// The hidden sizes a multiple leaves to pad, as "300 and 100"; empty when all are multiples.
std::string sizes_to_pad(const WorkloadTraits& t, long long multiple) {
  std::string list;
  for (const auto size : t.hidden_linear_sizes)
    if (size % multiple != 0) list += (list.empty() ? "" : " and ") + std::to_string(size);
  return list;
}

Knob pad_knob() {
  Knob k;
  k.name = "pad";
  k.description =
      "keep, or 8/16/64: the hidden sizes between two Linear layers padded with zeros up to that "
      "multiple (the output is unchanged; vector units and oneDNN's blocks want whole multiples)";
  k.values = [](const WorkloadTraits&) { return fixed({"keep", "8", "16", "64"}); };
  k.baseline = [](const WorkloadTraits&) { return "keep"; };
  k.listed_at_baseline = false;  // configurations named before it existed keep their names
  k.swept_by_default = never_swept;  // lint --fix tries each multiple; tune when --space names it
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (!t.torchscript) return Applicability::no("needs a TorchScript graph");
    if (value == "keep") return Applicability::yes();
    if (t.hidden_linear_sizes.empty())
      return Applicability::no("no Linear layer feeds another through per-element ops only");
    if (sizes_to_pad(t, std::stoll(value)).empty())
      return Applicability::no("the hidden Linear sizes are multiples of " + value + " already");
    return Applicability::yes();
  };
  k.prepare = [](const std::string& value, Workload& w) {
    if (value == "keep") return;
    auto* ts = w.model->as_torchscript();
    torch::jit::Module padded = ts->module().clone();  // the original's weights stay as they are
    pad_hidden_linear_sizes(padded, std::stoll(value));
    ts->replace(std::move(padded));
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    if (value == "keep") return KnobCode{};
    return rewrite_in_user_code("pad=" + value +
                                ": build the hidden Linear layers with sizes rounded up to "
                                "multiples of " + value);
  };
  return k;
}

Knob conv_bias_knob() {
  Knob k;
  k.name = "conv_bias";
  k.description =
      "keep, or fold: a convolution's bias that the batch norm right after cancels, folded into "
      "the norm's running mean and dropped (the output is unchanged)";
  k.values = [](const WorkloadTraits&) { return fixed({"keep", "fold"}); };
  k.baseline = [](const WorkloadTraits&) { return "keep"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"fold"}); };
  k.listed_at_baseline = false;  // configurations named before it existed keep their names
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    if (!t.torchscript) return Applicability::no("needs a TorchScript graph");
    return t.conv_bias_before_bn
               ? Applicability::yes()
               : Applicability::no("no convolution with a bias feeds a batch norm");
  };
  k.prepare = [](const std::string& value, Workload& w) {
    if (value != "fold") return;
    auto* ts = w.model->as_torchscript();
    torch::jit::Module folded = ts->module().clone();  // not run yet: its executors are fresh
    fold_conv_bias_into_batch_norm(folded);
    ts->replace(std::move(folded));
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    if (value != "fold") return KnobCode{};
    return rewrite_in_user_code(
        "conv_bias=fold: build the convolutions that feed batch norms with bias=False");
  };
  return k;
}

}  // namespace

KnobCode code_of(const RuntimeSnippet& s) {
  KnobCode c;
  c.cpp_includes = s.cpp_includes;
  c.cpp_declarations = s.cpp_declarations;
  c.cpp_setup = s.cpp_setup;
  c.python_setup = s.python_setup;
  return c;
}

namespace {

// The graph knob's values are the runtimes' (runtime/): each runtime says which it runs, how it
// prepares one and the lines that apply it; the knob only names them.
Knob graph_knob() {
  Knob k;
  k.name = "graph";
  k.description =
      "how the runtime prepares the model. C++ TorchScript: eager; frozen (torch::jit::freeze); "
      "frozen-opt (freeze + optimize_for_inference); fused (TensorExpr fuser allowed on CPU, set "
      "once per measurement). C++ AOTInductor (a torch.export program or a built-in): aoti "
      "(freezing), aoti-max-autotune (kernel choices benchmarked while compiling); compiled once, "
      "cached. Python (runtime=python): eager; compile (torch.compile), compile-reduce-overhead "
      "(CUDA graphs), compile-max-autotune, compile-max-autotune-no-cudagraphs; where a dimension "
      "varies (--dim), compile-dynamic and compile-static (torch.compile's dynamic=True/False). "
      "ONNX Runtime (runtime=onnxruntime, the program exported to ONNX): ort (all graph "
      "optimisations), ort-extended, ort-basic, ort-parallel (parallel execution), ort-no-arena. "
      "OpenVINO (runtime=openvino): openvino (latency hint), openvino-static (the same, the IR "
      "compiled for the inputs' own shapes), openvino-throughput";
  k.scope = KnobScope::kProcess;
  k.values = [](const WorkloadTraits& t) { return viewing_runtime(t).graphs(t); };
  k.baseline = [](const WorkloadTraits& t) { return viewing_runtime(t).graphs(t).front(); };
  k.expert = [](const WorkloadTraits& t) { return viewing_runtime(t).expert_graphs(t); };
  // The runtime of the traits decides (Runtime::applies); a value it does not run is refused there.
  k.applies = always;
  k.prepare = [](const std::string& value, Workload& w) {
    runtime_running(value).prepare(value, w);
  };
  k.enter = [](const std::string& value, const Workload& w) -> Undo {
    return runtime_running(value).enter(value, w.device.is_cuda());
  };
  k.code = [](const std::string& value, bool cuda) {
    return code_of(runtime_running(value).snippet(value, cuda));
  };
  return k;
}

Knob cuda_graphs_knob() {
  Knob k;
  k.name = "cuda_graphs";
  k.description =
      "C++ runtimes on CUDA: the forward captured once per input shape as a CUDA graph (static "
      "input and output buffers) and replayed with one launch per call; its capture time is "
      "reported apart. Python's torch.compile does the same with graph=compile-reduce-overhead";
  k.listed_at_baseline = false;  // configurations named before it existed keep their names
  k.values = [](const WorkloadTraits&) { return fixed({"off", "on"}); };
  k.baseline = [](const WorkloadTraits&) { return "off"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"on"}); };
  // Not applicable off CUDA, as tf32 is not: a CPU configuration does not name it.
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return cuda_only(t, "cuda_graphs (CUDA graphs)");
  };
  // Applied last among the model knobs: the graph it captures is the converted, frozen or
  // compiled one, and it is captured on the first call, inside every call knob's scope.
  k.prepare = [](const std::string& value, Workload& w) {
    if (value == "on") replay_cuda_graphs(w.model, w.device);
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (value != "on") return c;
    c.cpp_includes = {"<ATen/cuda/CUDAGraph.h>", "<c10/cuda/CUDAGuard.h>"};
    c.cpp_setup = {
        "// capture once (after warm-up calls on a side stream), then per call: copy the new inputs",
        "// into `inputs`, graph.replay(), read `output`",
        "at::cuda::CUDAGraph graph;",
        "c10::IValue output;",
        "{",
        "  c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());",
        "  for (int i = 0; i < 3; ++i) module.forward(inputs);",
        "  graph.capture_begin();",
        "  output = module.forward(inputs);",
        "  graph.capture_end();",
        "}"};
    c.python_setup = {
        "# capture once, then per call: copy the new inputs into static_inputs, g.replay(), read "
        "static_out",
        "side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())",
        "with torch.cuda.stream(side):",
        "    for _ in range(3): model(*static_inputs)",
        "torch.cuda.current_stream().wait_stream(side)",
        "g = torch.cuda.CUDAGraph()",
        "with torch.cuda.graph(g): static_out = model(*static_inputs)"};
    return c;
  };
  return k;
}

Knob cudnn_benchmark_knob() {
  Knob k;
  k.name = "cudnn_benchmark";
  k.description = "cuDNN picks convolution algorithms by timing them on first use";
  k.training = true;
  k.plan = [](const std::string& value, TrainingPlan& p) { p.cudnn_benchmark = value == "on"; };
  k.scope = KnobScope::kProcess;
  k.values = [](const WorkloadTraits&) { return fixed({"off", "on"}); };
  k.baseline = [](const WorkloadTraits&) { return "off"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"on"}); };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    if (!t.cuda) return cuda_only(t, "cudnn_benchmark");
    return t.convolutional ? Applicability::yes()
                           : Applicability::no("the model has no convolutions");
  };
  k.enter = [](const std::string& value, const Workload&) -> Undo {
    auto& ctx = at::globalContext();
    const bool previous = ctx.benchmarkCuDNN();
    ctx.setBenchmarkCuDNN(value == "on");
    return [previous] { at::globalContext().setBenchmarkCuDNN(previous); };
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    c.cpp_includes = {"<ATen/Context.h>"};
    c.cpp_setup = {std::string("at::globalContext().setBenchmarkCuDNN(") +
                   (value == "on" ? "true" : "false") + ");"};
    c.python_setup = {std::string("torch.backends.cudnn.benchmark = ") +
                      (value == "on" ? "True" : "False")};
    return c;
  };
  return k;
}

Knob tf32_knob() {
  Knob k;
  k.name = "tf32";
  k.description = "TF32 tensor-core math for fp32: default (cuDNN on, cuBLAS off), off, on (both)";
  k.scope = KnobScope::kProcess;
  k.values = [](const WorkloadTraits&) { return fixed({"default", "off", "on"}); };
  k.baseline = [](const WorkloadTraits&) { return "default"; };
  k.expert = [](const WorkloadTraits&) { return fixed({"on"}); };
  k.applies = [](const WorkloadTraits& t, const std::string&) { return cuda_only(t, "tf32"); };
  k.enter = [](const std::string& value, const Workload&) -> Undo {
    auto& ctx = at::globalContext();
    const bool cublas = ctx.allowTF32CuBLAS();
    const bool cudnn = ctx.allowTF32CuDNN();
    if (value != "default") {
      ctx.setAllowTF32CuBLAS(value == "on");
      ctx.setAllowTF32CuDNN(value == "on");
    }
    return [cublas, cudnn] {
      at::globalContext().setAllowTF32CuBLAS(cublas);
      at::globalContext().setAllowTF32CuDNN(cudnn);
    };
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (value == "default") return c;
    const std::string on = value == "on" ? "true" : "false";
    const std::string py = value == "on" ? "True" : "False";
    c.cpp_includes = {"<ATen/Context.h>"};
    c.cpp_setup = {"at::globalContext().setAllowTF32CuBLAS(" + on + ");",
                   "at::globalContext().setAllowTF32CuDNN(" + on + ");"};
    c.python_setup = {"torch.backends.cuda.matmul.allow_tf32 = " + py,
                      "torch.backends.cudnn.allow_tf32 = " + py};
    return c;
  };
  return k;
}

Knob executor_knob() {
  Knob k;
  k.name = "executor";
  k.description =
      "how TorchScript runs the model in training: optimized (the profiling executor specializes, "
      "differentiates subgraphs, fuses where a fuser compiles) or plain (op by op, autograd "
      "recording each op, as eager PyTorch; torch.jit.optimized_execution(False))";
  k.inference = false;  // inference has the graph knob (frozen, optimized for inference)
  k.training = true;
  k.scope = KnobScope::kProcess;  // a per-thread switch, set once on the thread that trains
  k.values = [](const WorkloadTraits&) { return fixed({"optimized", "plain"}); };
  k.baseline = [](const WorkloadTraits&) { return "optimized"; };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return t.torchscript ? Applicability::yes() : Applicability::no("needs a TorchScript model");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) {
    p.optimized_executor = value == "optimized";
  };
  k.enter = [](const std::string& value, const Workload&) -> Undo {
    const bool previous = compat::graph_executor_optimize();
    compat::set_graph_executor_optimize(value == "optimized");
    return [previous] { compat::set_graph_executor_optimize(previous); };
  };
  k.code = [](const std::string& value, bool /*cuda*/) {
    KnobCode c;
    if (value == "optimized") return c;
    c.cpp_includes = {"<torch/csrc/jit/python/update_graph_executor_opt.h>"};
    c.cpp_setup = {"torch::jit::setGraphExecutorOptimize(false);  // this thread only"};
    c.python_setup = {
        "torch._C._set_graph_executor_optimize(False)  # this thread; or, around the loop, "
        "with torch.jit.optimized_execution(False)"};
    return c;
  };
  return k;
}

// The training knobs below are read only by `train` (training_only, process_knobs.h).
Knob workers_knob() {
  Knob k = training_only("workers",
                         "loader threads that decode, resize and normalise batches ahead of the "
                         "step; 0 = in the training thread (PyTorch's num_workers)");
  k.integer_valued = true;
  k.min_integer = 0;
  k.values = [](const WorkloadTraits& t) {
    std::vector<std::string> v;
    for (int n = 0; n <= std::max(1, t.usable_cores); ++n) v.push_back(std::to_string(n));
    return v;
  };
  k.baseline = [](const WorkloadTraits&) { return "0"; };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    return at_most_four_per_core(t, value, "loader threads");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.workers = std::stoi(value); };
  return k;
}

Knob prefetch_knob() {
  Knob k = training_only("prefetch",
                         "batches each loader thread prepares ahead (PyTorch's prefetch_factor); "
                         "only with workers > 0");
  k.integer_valued = true;
  k.values = [](const WorkloadTraits&) { return fixed({"2", "4"}); };
  k.baseline = [](const WorkloadTraits&) { return "2"; };
  k.applies = [](const WorkloadTraits&, const std::string& value) {
    return std::stol(value) <= 64 ? Applicability::yes()
                                  : Applicability::no("more than 64 batches ahead per thread");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.prefetch = std::stoi(value); };
  return k;
}

Knob pin_memory_knob() {
  Knob k = training_only("pin_memory",
                         "batches made in page-locked host memory, so the copy to the device is "
                         "faster and can be asynchronous");
  k.values = [](const WorkloadTraits&) { return fixed({"off", "on"}); };
  k.baseline = [](const WorkloadTraits&) { return "off"; };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return cuda_only(t, "pinned host memory for device copies");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.pin_memory = value == "on"; };
  return k;
}

Knob non_blocking_knob() {
  Knob k = training_only("non_blocking",
                         "the host-to-device copy is queued, not waited for (from pinned memory "
                         "it overlaps with compute)");
  k.values = [](const WorkloadTraits&) { return fixed({"off", "on"}); };
  k.baseline = [](const WorkloadTraits&) { return "off"; };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return cuda_only(t, "asynchronous host-to-device copies");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) { p.non_blocking = value == "on"; };
  return k;
}

Knob transfer_knob() {
  Knob k = training_only("transfer",
                         "float32: images normalised to float on the host (4 bytes a value); "
                         "uint8: copied as bytes, converted and normalised after the copy");
  k.values = [](const WorkloadTraits&) { return fixed({"float32", "uint8"}); };
  k.baseline = [](const WorkloadTraits&) { return "float32"; };
  k.applies = [](const WorkloadTraits& t, const std::string&) {
    return t.uint8_data ? Applicability::yes()
                        : Applicability::no("the data are not 8-bit images");
  };
  k.plan = [](const std::string& value, TrainingPlan& p) {
    p.transfer = value == "uint8" ? Transfer::kUint8 : Transfer::kFloat32;
  };
  return k;
}

Knob amp_knob() {
  Knob k = training_only("amp",
                         "automatic mixed precision: forward and loss under autocast; fp16 with "
                         "a gradient scaler");
  k.changes_training = true;
  k.values = [](const WorkloadTraits&) { return fixed({"off", "bf16", "fp16"}); };
  k.baseline = [](const WorkloadTraits&) { return "off"; };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    if (value == "fp16" && !t.cuda)
      return Applicability::no("fp16 autocast for training runs on CUDA devices (use bf16 on a CPU)");
    return Applicability::yes();
  };
  k.plan = [](const std::string& value, TrainingPlan& p) {
    p.amp = value == "bf16" ? Amp::kBf16 : value == "fp16" ? Amp::kFp16 : Amp::kOff;
  };
  return k;
}

Knob zero_grad_knob() {
  Knob k = training_only("zero_grad",
                         "how gradients are cleared each step: zero (fill with 0) or set_to_none "
                         "(free them; the next backward writes instead of adding)");
  k.values = [](const WorkloadTraits&) { return fixed({"zero", "set_to_none"}); };
  k.baseline = [](const WorkloadTraits&) { return "zero"; };
  k.applies = always;
  k.plan = [](const std::string& value, TrainingPlan& p) { p.set_to_none = value == "set_to_none"; };
  return k;
}

// Who runs the training step is a runtime (runtime/): TorchScript in torchperf's own process, or
// PyTorch in a Python worker (python/torchperf/train_worker.py), eager or a torch.compile mode, every
// other training knob applied there as here. The values and their reasons are the runtimes'.
Knob step_knob() {
  Knob k = training_only("step",
                         "who runs the training step: torchscript (LibTorch, in torchperf's own "
                         "process) or PyTorch in a Python worker: eager, compile (torch.compile), "
                         "compile-reduce-overhead (with CUDA graphs), compile-max-autotune (kernel "
                         "choices benchmarked while compiling); a compile's time is reported apart "
                         "from the step's");
  k.scope = KnobScope::kWorker;  // a process of its own
  k.listed_at_baseline = false;
  k.swept_by_default = [](const WorkloadTraits&) { return false; };  // the ladder proposes it
  k.values = [](const WorkloadTraits& t) { return training_steps(t); };
  // The first runtime that trains the model as it comes: TorchScript where it has that form.
  k.baseline = [](const WorkloadTraits& t) {
    for (const auto& step : training_steps(t))
      if (runtime_for_step(step).trains(step, t).applies) return step;
    return training_steps(t).front();
  };
  k.applies = [](const WorkloadTraits& t, const std::string& value) {
    try {
      return runtime_for_step(value).trains(value, t);
    } catch (const ConfigError& e) {
      return Applicability::no(e.what());
    }
  };
  k.plan = [](const std::string& value, TrainingPlan& p) {
    p.runtime = &runtime_for_step(value);
    p.step = value;
  };
  return k;
}

}  // namespace

Applicability at_most_four_per_core(const WorkloadTraits& t, const std::string& value,
                                    const std::string& what) {
  const int cap = 4 * std::max(1, t.usable_cores);
  return std::stol(value) <= cap
             ? Applicability::yes()
             : Applicability::no("more than " + std::to_string(cap) + " " + what + " (4x the " +
                                 std::to_string(t.usable_cores) + " usable cores)");
}

std::string to_string(KnobScope scope) {
  switch (scope) {
    case KnobScope::kCall:
      return "call";
    case KnobScope::kProcess:
      return "process";
    case KnobScope::kWorker:
      return "worker";
  }
  return "call";
}

const std::vector<Knob>& knob_registry() {
  // Order is application order: inputs (batch) before mode, padding before the weights are
  // converted or packed, the quantized engine before the
  // precision that packs weights for it, precision before memory format, and graph transforms
  // (conv bias folded, then freezing) last so they see the converted weights.
  // Worker knobs come last: they are set when the process starts, before any of the others.
  static const std::vector<Knob> registry = [] {
    std::vector<Knob> r = {
        runtime_knob(),
        threads_knob(),   batch_knob(),       padding_knob(),  batching_knob(),
        mode_knob(),      grad_knob(),
        pad_knob(),       qengine_knob(),     precision_knob(),   format_knob(),   conv_bias_knob(),
        graph_knob(),     cuda_graphs_knob(), cudnn_benchmark_knob(), tf32_knob(), executor_knob(),
        workers_knob(),   prefetch_knob(),    pin_memory_knob(), non_blocking_knob(),
        transfer_knob(),  amp_knob(),         zero_grad_knob()};
    for (auto& k : training_scale_knobs()) r.push_back(std::move(k));
    r.push_back(step_knob());
    for (auto& k : worker_knobs()) r.push_back(std::move(k));
    for (auto& k : r) let_runtime_decide(k);
    return r;
  }();
  return registry;
}

namespace {

std::vector<Knob> knobs_where(bool Knob::*use) {
  std::vector<Knob> out;
  for (const auto& k : knob_registry())
    if (k.*use) out.push_back(k);
  return out;
}

}  // namespace

const std::vector<Knob>& inference_knobs() {
  static const std::vector<Knob> knobs = knobs_where(&Knob::inference);
  return knobs;
}

const std::vector<Knob>& training_knobs() {
  static const std::vector<Knob> knobs = knobs_where(&Knob::training);
  return knobs;
}

std::string to_string(Transfer transfer) {
  return transfer == Transfer::kUint8 ? "uint8" : "float32";
}

std::string to_string(Amp amp) {
  return amp == Amp::kBf16 ? "bf16" : amp == Amp::kFp16 ? "fp16" : "off";
}

// Knobs that existed and no longer apply, with the reason: an old configuration or journal that
// names one gets that reason, not a bare "unknown knob".
const std::map<std::string, std::string>& retired_knobs() {
  static const std::map<std::string, std::string> retired = {
      {"blas",
       "it chose Debian's libblas.so.3 provider, and the LibTorch torchperf runs now (PyPI's) links "
       "its BLAS (MKL) into libtorch_cpu: there is no library to swap; mkl_isa tunes MKL on Intel CPUs"}};
  return retired;
}

const Knob& find_knob(const std::string& name) {
  for (const auto& k : knob_registry())
    if (k.name == name) return k;
  std::string known;  // spelled out only for the error: a space asks this per knob of each point
  for (const auto& k : knob_registry()) known += (known.empty() ? "" : ", ") + k.name;
  if (const auto it = retired_knobs().find(name); it != retired_knobs().end())
    throw ConfigError("knob '" + name + "' is no longer available: " + it->second);
  throw ConfigError("unknown knob '" + name + "'; known knobs: " + known);
}

std::vector<std::string> all_values(const Knob& knob) {
  // CUDA has the most values; a CPU model of Linear layers adds int8; each runtime its own graph
  // values, seen on a model that comes in both forms (a built-in).
  WorkloadTraits cuda;
  cuda.cuda = true;
  cuda.usable_cores = 1;
  WorkloadTraits cpu_linear;
  cpu_linear.linear = true;
  cpu_linear.usable_cores = 1;
  WorkloadTraits both = cuda;
  both.program_form = true;
  both.convolutional = both.image_input = true;
  both.named_dims = {"S"};  // the values only a varying dimension offers (compile-static, ...)
  for (const Runtime* r : runtimes()) {  // every engine, as if installed, and torchao
    both.engines.push_back(r->name());
    both.cuda_engines.push_back(r->name());
  }
  both.engines.push_back("torchao");
  both.linear = true;
  WorkloadTraits both_cpu = both;  // the CPU's own values (int8-static)
  both_cpu.cuda = false;
  std::vector<std::string> out;
  const auto add = [&](const WorkloadTraits& t) {
    for (const auto& v : knob.values(t))
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  add(cuda);
  add(cpu_linear);
  for (const Runtime* r : runtimes())
    for (const auto* t : {&both, &both_cpu})
      if (r->accepts(*t).applies) add(r->view(*t));
  return out;
}

std::string describe_integer(const Knob& knob) {
  return knob.min_integer == 1 ? "a positive integer"
                               : "an integer >= " + std::to_string(knob.min_integer);
}

}  // namespace torchperf
