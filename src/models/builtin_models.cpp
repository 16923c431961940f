#include "torchperf/models/builtin_models.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <cmath>

#include "torchperf/error.h"

namespace torchperf {
namespace {

using torch::jit::Module;

// Builds modules that share one compilation unit; class names are mangled so that modules of one
// kind with different shapes (their code differs) can coexist.
class ModuleFactory {
 public:
  explicit ModuleFactory(std::uint64_t seed)
      : cu_(std::make_shared<torch::jit::CompilationUnit>()),
        generator_(at::detail::createCPUGenerator(seed)) {}

  Module make(const std::string& type_name) {
    Module m(c10::QualifiedName("__torch__.torchperf." + type_name), cu_, /*shouldMangle=*/true);
    m.register_attribute("training", c10::BoolType::get(), true);
    return m;
  }

  at::Tensor normal(at::IntArrayRef shape, double stddev) {
    return at::normal(0.0, stddev, shape, generator_);
  }
  at::Tensor uniform(at::IntArrayRef shape, double bound) {
    return at::empty(shape).uniform_(-bound, bound, generator_);
  }

  // torchvision's initialisation: kaiming normal (fan_out, relu) for convolutions.
  Module conv(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
              std::int64_t pad, bool bias) {
    Module m = make("Conv2d");
    const double stddev = std::sqrt(2.0 / static_cast<double>(out * k * k));
    m.register_parameter("weight", normal({out, in, k, k}, stddev), false);
    if (bias) m.register_parameter("bias", at::zeros({out}), false);
    m.define(fmt::format(R"(
def forward(self, x):
    return torch.conv2d(x, self.weight, {bias}, [{s}, {s}], [{p}, {p}], [1, 1], 1)
)",
                         fmt::arg("bias", bias ? "self.bias" : "None"), fmt::arg("s", stride),
                         fmt::arg("p", pad)));
    return m;
  }

  Module batch_norm(std::int64_t channels) {
    Module m = make("BatchNorm2d");
    m.register_parameter("weight", at::ones({channels}), false);
    m.register_parameter("bias", at::zeros({channels}), false);
    m.register_buffer("running_mean", at::zeros({channels}));
    m.register_buffer("running_var", at::ones({channels}));
    m.define(R"(
def forward(self, x):
    return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var,
                            self.training, 0.1, 1e-5, False)
)");
    return m;
  }

  Module linear(std::int64_t in, std::int64_t out) {
    Module m = make("Linear");
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    m.register_parameter("weight", uniform({out, in}, bound), false);
    m.register_parameter("bias", uniform({out}, bound), false);
    m.define(R"(
def forward(self, x):
    return torch.linear(x, self.weight, self.bias)
)");
    return m;
  }

  Module layer_norm(std::int64_t features) {
    Module m = make("LayerNorm");
    m.register_parameter("weight", at::ones({features}), false);
    m.register_parameter("bias", at::zeros({features}), false);
    m.define(fmt::format(R"(
def forward(self, x):
    return torch.layer_norm(x, [{n}], self.weight, self.bias, 1e-12)
)",
                         fmt::arg("n", features)));
    return m;
  }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> cu_;
  at::Generator generator_;
};

Module basic_block(ModuleFactory& f, std::int64_t in, std::int64_t out, std::int64_t stride) {
  Module m = f.make("BasicBlock");
  m.register_module("conv1", f.conv(in, out, 3, stride, 1, false));
  m.register_module("bn1", f.batch_norm(out));
  m.register_module("conv2", f.conv(out, out, 3, 1, 1, false));
  m.register_module("bn2", f.batch_norm(out));
  const bool downsample = stride != 1 || in != out;
  if (downsample) {
    m.register_module("downsample_conv", f.conv(in, out, 1, stride, 0, false));
    m.register_module("downsample_bn", f.batch_norm(out));
  }
  m.define(fmt::format(
      R"(
def forward(self, x):
    out = torch.relu(self.bn1.forward(self.conv1.forward(x)))
    out = self.bn2.forward(self.conv2.forward(out))
    identity = {identity}
    return torch.relu(out + identity)
)",
      fmt::arg("identity",
               downsample ? "self.downsample_bn.forward(self.downsample_conv.forward(x))" : "x")));
  return m;
}

// ResNet-18 as in torchvision (He et al. 2016): the same layers, shapes and FLOPs.
Module resnet18(std::uint64_t seed) {
  ModuleFactory f(seed);
  Module m = f.make("ResNet");
  m.register_module("conv1", f.conv(3, 64, 7, 2, 3, false));
  m.register_module("bn1", f.batch_norm(64));
  const std::int64_t widths[] = {64, 128, 256, 512};
  std::int64_t in = 64;
  std::string body;
  for (int layer = 0; layer < 4; ++layer) {
    for (int block = 0; block < 2; ++block) {
      const std::int64_t stride = (layer > 0 && block == 0) ? 2 : 1;
      const std::string name = fmt::format("layer{}_{}", layer + 1, block);
      m.register_module(name, basic_block(f, in, widths[layer], stride));
      body += fmt::format("    x = self.{}.forward(x)\n", name);
      in = widths[layer];
    }
  }
  m.register_module("fc", f.linear(512, 1000));
  m.define(R"(
def forward(self, x):
    x = torch.relu(self.bn1.forward(self.conv1.forward(x)))
    x = torch.max_pool2d(x, [3, 3], [2, 2], [1, 1], [1, 1], False)
)" + body + R"(    x = torch.adaptive_avg_pool2d(x, [1, 1])
    x = torch.flatten(x, 1)
    return self.fc.forward(x)
)");
  return m;
}

Module mlp(std::uint64_t seed) {
  ModuleFactory f(seed);
  Module m = f.make("MLP");
  m.register_module("fc1", f.linear(784, 512));
  m.register_module("fc2", f.linear(512, 512));
  m.register_module("fc3", f.linear(512, 10));
  m.define(R"(
def forward(self, x):
    x = torch.relu(self.fc1.forward(x))
    x = torch.relu(self.fc2.forward(x))
    return self.fc3.forward(x)
)");
  return m;
}

// A small convnet that keeps conv bias before batch norm: the anti-pattern the tuning guide names
// (the bias is cancelled by the normalisation), kept on purpose for lint and freezing to find.
Module convbn(std::uint64_t seed) {
  ModuleFactory f(seed);
  Module m = f.make("ConvBiasBN");
  m.register_module("conv1", f.conv(3, 32, 3, 1, 1, true));
  m.register_module("bn1", f.batch_norm(32));
  m.register_module("conv2", f.conv(32, 64, 3, 2, 1, true));
  m.register_module("bn2", f.batch_norm(64));
  m.register_module("conv3", f.conv(64, 64, 3, 1, 1, true));
  m.register_module("bn3", f.batch_norm(64));
  m.register_module("fc", f.linear(64, 10));
  m.define(R"(
def forward(self, x):
    x = torch.relu(self.bn1.forward(self.conv1.forward(x)))
    x = torch.relu(self.bn2.forward(self.conv2.forward(x)))
    x = torch.relu(self.bn3.forward(self.conv3.forward(x)))
    x = torch.adaptive_avg_pool2d(x, [1, 1])
    return self.fc.forward(torch.flatten(x, 1))
)");
  return m;
}

struct EncoderSize {
  std::int64_t vocab, hidden, layers, heads, intermediate, max_positions, sequence;
};

const EncoderSize kTinyEncoder{1000, 64, 2, 4, 256, 128, 32};
const EncoderSize kBertBase{30522, 768, 12, 12, 3072, 512, 128};

Module encoder_layer(ModuleFactory& f, const EncoderSize& s) {
  Module m = f.make("EncoderLayer");
  for (const char* name : {"query", "key", "value", "attention_out"})
    m.register_module(name, f.linear(s.hidden, s.hidden));
  m.register_module("attention_norm", f.layer_norm(s.hidden));
  m.register_module("intermediate", f.linear(s.hidden, s.intermediate));
  m.register_module("output", f.linear(s.intermediate, s.hidden));
  m.register_module("output_norm", f.layer_norm(s.hidden));
  const std::int64_t head_dim = s.hidden / s.heads;
  m.define(fmt::format(R"(
def forward(self, x, mask_bias):
    b = x.size(0)
    n = x.size(1)
    q = self.query.forward(x).view(b, n, {heads}, {dim}).transpose(1, 2)
    k = self.key.forward(x).view(b, n, {heads}, {dim}).transpose(1, 2)
    v = self.value.forward(x).view(b, n, {heads}, {dim}).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(-1, -2)) * {scale} + mask_bias
    context = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2).reshape(b, n, {hidden})
    x = self.attention_norm.forward(x + self.attention_out.forward(context))
    h = torch.gelu(self.intermediate.forward(x))
    return self.output_norm.forward(x + self.output.forward(h))
)",
                       fmt::arg("heads", s.heads), fmt::arg("dim", head_dim),
                       fmt::arg("scale", 1.0 / std::sqrt(static_cast<double>(head_dim))),
                       fmt::arg("hidden", s.hidden)));
  return m;
}

// A BERT-style encoder (Devlin et al. 2019): embeddings, post-norm layers with GELU, a tanh pooler.
// Returns (sequence_output, pooled_output), so tuple outputs are exercised too.
Module encoder(const EncoderSize& s, std::uint64_t seed) {
  ModuleFactory f(seed);
  Module m = f.make("Encoder");
  m.register_parameter("word_embeddings", f.normal({s.vocab, s.hidden}, 0.02), false);
  m.register_parameter("position_embeddings", f.normal({s.max_positions, s.hidden}, 0.02), false);
  m.register_module("embedding_norm", f.layer_norm(s.hidden));
  std::string body;
  for (std::int64_t i = 0; i < s.layers; ++i) {
    m.register_module(fmt::format("layer{}", i), encoder_layer(f, s));
    body += fmt::format("    x = self.layer{}.forward(x, mask_bias)\n", i);
  }
  m.register_module("pooler", f.linear(s.hidden, s.hidden));
  m.define(R"(
def forward(self, input_ids, attention_mask):
    n = input_ids.size(1)
    x = torch.embedding(self.word_embeddings, input_ids) + self.position_embeddings[0:n]
    x = self.embedding_norm.forward(x)
    mask_bias = (1.0 - attention_mask.unsqueeze(1).unsqueeze(2).to(x.dtype)) * -10000.0
)" + body + R"(    pooled = torch.tanh(self.pooler.forward(x[:, 0]))
    return x, pooled
)");
  return m;
}

InputSpec encoder_inputs(const EncoderSize& s) {
  return parse_input_spec(fmt::format("int64:{n}@0..{v};int64:{n}@1..2", fmt::arg("n", s.sequence),
                                      fmt::arg("v", s.vocab)));
}

}  // namespace

const std::vector<BuiltinModelInfo>& builtin_models() {
  static const std::vector<BuiltinModelInfo> models = {
      {"mlp", "3-layer perceptron 784-512-512-10 (Linear+ReLU)", parse_input_spec("784")},
      {"resnet18", "ResNet-18, torchvision's architecture, random weights",
       parse_input_spec("3x224x224")},
      {"encoder", "BERT-style transformer encoder, tiny (2 layers, hidden 64, sequence 32)",
       encoder_inputs(kTinyEncoder)},
      {"encoder:bert-base", "BERT-base-sized encoder (12 layers, hidden 768, sequence 128)",
       encoder_inputs(kBertBase)},
      {"convbn", "small convnet with conv bias before batch norm (a known anti-pattern)",
       parse_input_spec("3x64x64")},
  };
  return models;
}

const BuiltinModelInfo& find_builtin(const std::string& name) {
  std::string known;
  for (const auto& info : builtin_models()) {
    if (info.name == name) return info;
    known += (known.empty() ? "" : ", ") + std::string("builtin:") + info.name;
  }
  throw UsageError("unknown built-in model 'builtin:" + name + "'; expected one of " + known);
}

namespace {

Module build_in_training_mode(const std::string& name, std::uint64_t seed) {
  if (name == "mlp") return mlp(seed);
  if (name == "resnet18") return resnet18(seed);
  if (name == "encoder") return encoder(kTinyEncoder, seed);
  if (name == "encoder:bert-base") return encoder(kBertBase, seed);
  if (name == "convbn") return convbn(seed);
  throw RuntimeFailure("built-in '" + name + "' is listed but has no builder");
}

}  // namespace

torch::jit::Module build_builtin(const std::string& name, std::uint64_t seed) {
  find_builtin(name);
  // Built-ins stand for models exported for inference (torch.jit.script(model.eval())), so they
  // load in eval mode; a model saved in training mode is a torchvision fixture of the test suite.
  Module m = build_in_training_mode(name, seed);
  m.eval();
  // Parameters require grad, as every nn.Module's do: grad=on must really record autograd.
  for (const auto& p : m.parameters()) p.requires_grad_(true);
  return m;
}

}  // namespace torchperf
