// The engines a torch.export program converts to, each a runtime of its own family: ONNX Runtime
// (the program exported with torch.onnx's dynamo exporter) and OpenVINO (openvino.convert_model of
// the program). Their points run in the Python worker (python/torchperf/engines.py), which converts
// once per model and caches the result, on the same threads and inputs as every other runtime.
#include <algorithm>

#include "runtimes.h"

namespace torchperf {

// The guides' start of each engine comes first (ORT with all its optimisations, OpenVINO's
// latency hint): an engine's baseline and expert graph.
const std::vector<EngineGraph>& engine_graphs() {
  static const std::vector<EngineGraph> graphs = {
      {"ort", "onnxruntime", "all", false, true, nullptr, false},
      {"ort-extended", "onnxruntime", "extended", false, true, nullptr, false},
      {"ort-basic", "onnxruntime", "basic", false, true, nullptr, false},
      {"ort-parallel", "onnxruntime", "all", true, true, nullptr, false},
      {"ort-no-arena", "onnxruntime", "all", false, false, nullptr, false},
      {"openvino", "openvino", nullptr, false, false, "LATENCY", false},
      {"openvino-static", "openvino", nullptr, false, false, "LATENCY", true},
      {"openvino-throughput", "openvino", nullptr, false, false, "THROUGHPUT", false},
  };
  return graphs;
}

const EngineGraph* engine_graph(const std::string& graph) {
  for (const auto& g : engine_graphs())
    if (graph == g.graph) return &g;
  return nullptr;
}

namespace {

// What differs between the engines: their names, how they run on CUDA, and the lines a user writes.
struct Engine {
  const char* name;   // the runtime's and the family's: onnxruntime | openvino
  const char* label;  // ONNX Runtime | OpenVINO
  const char* pip;    // what installs it (requirements.txt pins it)
  const char* not_on_cuda;  // why it does not run on a CUDA device here
};

constexpr Engine kOnnxRuntime{
    "onnxruntime", "ONNX Runtime", "onnxruntime",
    "this Python's onnxruntime has no CUDAExecutionProvider (the onnxruntime-gpu package has it)"};
constexpr Engine kOpenVino{"openvino", "OpenVINO", "openvino",
                           "OpenVINO runs on CPUs and Intel GPUs, not on CUDA devices"};

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class EngineRuntime final : public Runtime {
 public:
  explicit EngineRuntime(const Engine& engine) : engine_(engine) {}
  std::string name() const override { return engine_.name; }
  std::string label() const override { return engine_.label; }
  std::string family() const override { return engine_.name; }
  RuntimeWorker worker() const override { return RuntimeWorker::kPython; }
  Applicability accepts(const WorkloadTraits& model) const override {
    if (!model.program_form)
      return Applicability::no(label() + " runs a model converted from its torch.export program "
                               "(a .pt2, a built-in, --from-python): a TorchScript file has none");
    if (!listed(model.engines, name()))
      return Applicability::no(label() + " is not installed in the Python worker's Python (pip "
                               "install 'torchperf[engines]', or " + engine_.pip + " as "
                               "requirements.txt pins it)");
    if (model.cuda && !listed(model.cuda_engines, name()))
      return Applicability::no(label() + " does not run on CUDA here: " + engine_.not_on_cuda);
    return Applicability::yes();
  }
  ModelForm form(const WorkloadTraits&) const override { return ModelForm::kProgram; }
  std::vector<std::string> graphs(const WorkloadTraits&) const override {
    std::vector<std::string> out;
    for (const auto& g : engine_graphs())
      if (name() == g.engine) out.push_back(g.graph);
    return out;
  }
  std::vector<std::string> expert_graphs(const WorkloadTraits& view) const override {
    return {graphs(view).front()};
  }
  // Converting is this runtime's compile: paid once per model in the worker (cached on disk
  // after), reported apart from the run, priced by its history before it is paid.
  bool compiles(const std::string&) const override { return true; }
  Artefact artefact(const KnobValues& value, const WorkloadTraits& view) const override {
    Artefact a;
    if (!engine_graph(value("graph"))) return a;
    a.kind = ArtefactKind::kWorkerCompile;
    a.name = value("graph");
    a.plain = graphs(view).front();
    return a;
  }
  std::optional<Applicability> applies(const std::string& knob, const std::string& value,
                                       const WorkloadTraits& view) const override {
    if (knob == "runtime") return std::nullopt;
    // Its threads are the threads knob's (intra-op threads, as every runtime's); the batch, the
    // stream's padding and batching, the allocator (preloaded into the worker) are everyone's.
    if (knob == "threads" || knob == "batch" || knob == "allocator" || knob == "padding" ||
        knob == "batching")
      return std::nullopt;
    if (knob == "graph") {
      const EngineGraph* g = engine_graph(value);
      if (g && g->static_shapes && (!view.named_dims.empty() || !view.stream_batch_longest.empty()))
        return Applicability::no("graph=" + value + " compiles the IR for each shape it meets, "
                                 "and the inputs' sizes vary here: graph=" + graphs(view).front());
      if (g && name() == g->engine) return Applicability::yes();
      std::string mine;
      for (const auto& v : graphs(view)) mine += (mine.empty() ? "" : ", ") + v;
      return Applicability::no("runtime=" + name() + " runs graph=" + mine);
    }
    if (knob == "precision") return precision(value, view);
    if (knob == "format")
      return Applicability::no(label() + " chooses its own layouts: the inputs stay as the model "
                               "takes them");
    if (knob == "grad") return Applicability::no("a converted graph has no autograd");
    return Applicability::no("not applied by runtime=" + name());
  }
  std::optional<std::vector<std::string>> values(const std::string& knob,
                                                 const WorkloadTraits& view) const override {
    if (knob == "graph") return graphs(view);
    if (knob == "precision") {
      std::vector<std::string> out = {"fp32"};
      for (const char* v : {"int8-static", "int8-dynamic"})
        if (precision(v, view).applies) out.push_back(v);
      return out;
    }
    return std::nullopt;
  }
  std::optional<std::string> baseline(const std::string& knob,
                                      const WorkloadTraits& view) const override {
    if (knob == "graph") return graphs(view).front();
    if (knob == "precision") return std::string("fp32");
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> expert(const std::string& knob,
                                                 const WorkloadTraits& view) const override {
    if (knob == "graph") return expert_graphs(view);
    if (knob == "threads" || knob == "batch" || knob == "padding" || knob == "batching")
      return std::nullopt;
    // The guides' int8 on a CPU is static quantization of a CNN (004): the reduced start.
    if (knob == "precision" && view.convolutional && precision("int8-static", view).applies)
      return std::vector<std::string>{"int8-static"};
    return std::vector<std::string>{};
  }
  RuntimeSnippet snippet(const std::string& graph, bool cuda) const override {
    RuntimeSnippet s;
    const EngineGraph* g = engine_graph(graph);
    if (!g) return s;
    s.cpp_setup = {"// graph=" + graph + " runs in " + label() + ": the Python snippet applies it"};
    // The program converted is the one tune exported (its batch and named dimensions dynamic),
    // which the snippet loads as `program`; a model that came without one is exported here.
    s.python_setup = {
        "program = globals().get(\"program\") or torch.export.export(model, tuple(inputs))"};
    if (name() == kOnnxRuntime.name) {
      const std::string level = std::string(g->level) == "all" ? "ORT_ENABLE_ALL"
                                : std::string(g->level) == "extended" ? "ORT_ENABLE_EXTENDED"
                                                                      : "ORT_ENABLE_BASIC";
      s.python_setup.insert(s.python_setup.end(), {
          "import onnxruntime as ort",
          "torch.onnx.export(program, tuple(inputs), \"model.onnx\", dynamo=True)",
          "options = ort.SessionOptions()",
          "options.graph_optimization_level = ort.GraphOptimizationLevel." + level,
          "options.intra_op_num_threads = torch.get_num_threads()  # the threads knob's value",
          std::string("options.execution_mode = ort.ExecutionMode.") +
              (g->parallel ? "ORT_PARALLEL" : "ORT_SEQUENTIAL"),
          std::string("options.enable_cpu_mem_arena = ") + (g->arena ? "True" : "False"),
          std::string("session = ort.InferenceSession(\"model.onnx\", options, providers=[\"") +
              (cuda ? "CUDAExecutionProvider" : "CPUExecutionProvider") + "\"])",
          "names = [i.name for i in session.get_inputs()]",
          "model = lambda *xs: [torch.from_numpy(o) for o in session.run(None, "
          "{n: x.numpy() for n, x in zip(names, xs)})]"});
    } else {
      s.python_setup.insert(s.python_setup.end(), {
          "import openvino as ov",
          "ir = ov.convert_model(program)",
          std::string("properties = {\"PERFORMANCE_HINT\": \"") + g->hint + "\", "
              "\"INFERENCE_NUM_THREADS\": torch.get_num_threads(), "
              "\"INFERENCE_PRECISION_HINT\": \"f32\"}",
          "compiled = ov.Core().compile_model(ir, \"CPU\", properties)",
          "request = compiled.create_infer_request()"});
      if (g->static_shapes)
        s.python_setup.insert(s.python_setup.end(), {
            "by_shape = {}  # graph=" + graph + ": the IR compiled for each input shape met",
            "def model(*xs):",
            "    shapes = tuple(tuple(x.shape) for x in xs)",
            "    if shapes not in by_shape:",
            "        ir.reshape({port: list(s) for port, s in zip(ir.inputs, shapes)})",
            "        once = ov.Core().compile_model(ir, \"CPU\", properties)",
            "        by_shape[shapes] = (once, once.create_infer_request())",
            "    once, infer = by_shape[shapes]",
            "    return [torch.from_numpy(infer.infer([x.numpy() for x in xs], "
            "share_inputs=True)[o]) for o in once.outputs]"});
      else
        s.python_setup.push_back(
            "model = lambda *xs: [torch.from_numpy(request.infer([x.numpy() for x in xs], "
            "share_inputs=True)[o]) for o in compiled.outputs]");
    }
    return s;
  }

  // ONNX Runtime's int8 as engines.py makes it: the exported file quantized, its session made
  // again on the quantized file (the graph's `model` calls `session` by name). OpenVINO compiles
  // that same QDQ file again, with the graph's properties (its `model` calls `request`).
  std::optional<RuntimeSnippet> knob_snippet(const std::string& knob,
                                             const std::string& value) const override {
    const bool ort = name() == kOnnxRuntime.name;
    if (knob != "precision" || (value != "int8-static" && (value != "int8-dynamic" || !ort)))
      return std::nullopt;
    RuntimeSnippet s;
    s.cpp_setup = {"// precision=" + value + " is ONNX Runtime's quantization in Python: the "
                   "Python snippet applies it"};
    s.python_setup = {"import os", "from onnxruntime import quantization as q"};
    if (!ort)
      s.python_setup.insert(s.python_setup.end(), {
          "import onnx",
          "torch.onnx.export(program, tuple(inputs), \"model.onnx\", dynamo=True)",
          "names = [i.name for i in onnx.load(\"model.onnx\", load_external_data=False).graph.input]"});
    if (value == "int8-static") {
      s.python_setup.insert(s.python_setup.end(), {
          "class Samples(q.CalibrationDataReader):  # calibration: run your real samples here",
          "    def __init__(self, batches):",
          "        self.batches = iter([{n: x.numpy() for n, x in zip(names, b)} for b in batches])",
          "    def get_next(self):",
          "        return next(self.batches, None)",
          "q.quantize_static(os.path.abspath(\"model.onnx\"), \"model.int8.onnx\", Samples([inputs]), "
          "quant_format=q.QuantFormat.QDQ, per_channel=True)  # reduce_range=True without VNNI"});
    } else {
      s.python_setup.push_back(
          "q.quantize_dynamic(os.path.abspath(\"model.onnx\"), \"model.int8.onnx\", "
          "weight_type=q.QuantType.QInt8)  # a relative path fails its shape inference");
    }
    if (ort) {
      s.python_setup.push_back(
          "session = ort.InferenceSession(\"model.int8.onnx\", options, "
          "providers=session.get_providers())");
    } else {
      s.python_setup.insert(s.python_setup.end(), {
          "ir = ov.Core().read_model(\"model.int8.onnx\")  # a static graph compiles it per shape",
          "compiled = ov.Core().compile_model(ir, \"CPU\", properties)",
          "request = compiled.create_infer_request()"});
    }
    return s;
  }

 private:
  // ONNX Runtime's own int8 (onnxruntime.quantization, python/torchperf/engines.py): static QDQ
  // calibrated on the point's inputs where convolutions or Linear layers carry the work, dynamic
  // (MatMul/Gemm weights) where Linear layers do. OpenVINO reads that QDQ file and runs it in int8
  // (static only). On the CPU: the int8 kernels are the CPU's.
  Applicability precision(const std::string& value, const WorkloadTraits& view) const {
    if (value == "fp32") return Applicability::yes();
    const bool ort = name() == kOnnxRuntime.name;
    if (value != "int8-static" && (value != "int8-dynamic" || !ort))
      return Applicability::no(label() + " runs the converted fp32 graph or " +
                               (ort ? "its own int8-static or int8-dynamic"
                                    : "ONNX Runtime's int8-static") +
                               ": precision=" + value + " is " +
                               (value == "int8-dynamic" ? "ONNX Runtime's" : "PyTorch's"));
    if (view.cuda) return Applicability::no(label() + "'s int8 is measured on the CPU only");
    if (!ort && !listed(view.engines, kOnnxRuntime.name))
      return Applicability::no("OpenVINO's int8 is ONNX Runtime's quantization of the model "
                               "(its QDQ file, run in int8), and onnxruntime is not installed");
    if (value == "int8-dynamic" && !view.linear)
      return Applicability::no("the model has no Linear layers (MatMul, Gemm) for ONNX "
                               "Runtime's dynamic int8");
    if (!view.convolutional && !view.linear)
      return Applicability::no("the model has no convolutions or Linear layers to quantize");
    return Applicability::yes();
  }

  Engine engine_;
};

}  // namespace

const Runtime& onnxruntime_runtime() {
  static const EngineRuntime runtime(kOnnxRuntime);
  return runtime;
}

const Runtime& openvino_runtime() {
  static const EngineRuntime runtime(kOpenVino);
  return runtime;
}

}  // namespace torchperf
