#include "torchperf/models/exported_program.h"

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <regex>

#include "torchperf/error.h"

namespace torchperf {
namespace {

// torch/_export/serde/schema.py's ScalarType.
std::optional<DType> dtype_of(int code) {
  switch (code) {
    case 1: return DType::kUInt8;
    case 4: return DType::kInt32;
    case 5: return DType::kInt64;
    case 6: return DType::kFloat16;
    case 7: return DType::kFloat32;
    case 8: return DType::kFloat64;
    case 12: return DType::kBool;
    case 13: return DType::kBFloat16;
    default: return std::nullopt;
  }
}

std::vector<std::string> records(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    return reader.getAllRecords();
  } catch (const std::exception&) {
    throw ModelError("model '" + path +
                     "': a zip archive that is not a PyTorch archive (no PyTorch records in it)");
  }
}

std::string symbol_of(const std::string& expr) {
  static const std::regex symbol(R"(Symbol\('([A-Za-z_][A-Za-z0-9_]*)')");
  std::smatch m;
  return std::regex_search(expr, m, symbol) ? m[1].str() : expr;
}

}  // namespace

ArchiveKind archive_kind(const std::string& path) {
  bool format = false, program = false, package = false, code = false, data = false;
  for (const auto& r : records(path)) {
    format |= r == "archive_format";
    program |= r.rfind("models/", 0) == 0 && r.size() > 5 && r.substr(r.size() - 5) == ".json";
    package |= r.rfind("data/aotinductor/", 0) == 0;
    code |= r.rfind("code/", 0) == 0;
    data |= r == "data.pkl";
  }
  if (format && package) return ArchiveKind::kAotiPackage;
  if (format && program) return ArchiveKind::kExportedProgram;
  if (code) return ArchiveKind::kTorchScript;
  if (data) return ArchiveKind::kTorchSave;
  return ArchiveKind::kOther;
}

namespace {

// The program's schema: the models/*.json record of the .pt2 archive.
nlohmann::json read_program_json(const std::string& path) {
  nlohmann::json doc;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    std::string name;
    for (const auto& r : reader.getAllRecords())
      if (r.rfind("models/", 0) == 0 && r.size() > 5 && r.substr(r.size() - 5) == ".json") {
        name = r;
        break;
      }
    if (name.empty()) throw ModelError("no models/*.json record");
    auto [data, size] = reader.getRecord(name);
    const char* bytes = static_cast<const char*>(data.get());
    doc = nlohmann::json::parse(bytes, bytes + size);
  } catch (const std::exception& e) {
    throw ModelError("model '" + path + "': not a readable torch.export program (" + e.what() + ")");
  }
  return doc;
}

// One of forward's inputs from its input spec: nullopt for a parameter or buffer; a non-tensor
// input is refused by name. first_symbol: the symbol of its first dynamic size, or "".
std::optional<ProgramInput> program_input(const std::string& path, const nlohmann::json& spec,
                                          const nlohmann::json& tensors,
                                          std::string& first_symbol) {
  // A Python number among forward's arguments is exported as a constant the caller must
  // still pass: fed tensors alone, the program refuses its input tree.
  if (spec.contains("constant_input")) {
    const auto& c = spec.at("constant_input");
    // {"as_int": 3} -> 3: the value as the user wrote it.
    nlohmann::json value = c.value("value", nlohmann::json());
    if (value.is_object() && value.size() == 1) value = value.begin().value();
    throw ModelError(fmt::format(
        "model '{}': the program takes a non-tensor input '{}' (exported as the constant "
        "{}); torchperf feeds tensors only: export a module whose forward takes the tensors "
        "alone, with that value fixed inside it",
        path, c.value("name", "?"), value.is_null() ? std::string("?") : value.dump()));
  }
  if (!spec.contains("user_input")) return std::nullopt;
  const auto& arg = spec.at("user_input").at("arg");
  if (!arg.contains("as_tensor"))
    throw ModelError(fmt::format(
        "model '{}': the program takes a non-tensor input ({}); torchperf feeds tensors: "
        "export it with that value fixed",
        path, arg.dump()));
  ProgramInput in;
  in.name = arg.at("as_tensor").at("name").get<std::string>();
  const auto& meta = tensors.at(in.name);
  const auto dtype = dtype_of(meta.at("dtype").get<int>());
  if (!dtype)
    throw ModelError(fmt::format("model '{}': input '{}' has a dtype torchperf cannot make "
                                 "(ScalarType {})",
                                 path, in.name, meta.at("dtype").get<int>()));
  in.dtype = *dtype;
  first_symbol.clear();
  for (const auto& size : meta.at("sizes")) {
    if (size.contains("as_int")) {
      in.sizes.push_back(size.at("as_int").get<std::int64_t>());
      in.dynamic.push_back(false);
      in.symbols.emplace_back();
    } else {
      const auto& expr = size.at("as_expr");
      in.sizes.push_back(expr.contains("hint") && expr.at("hint").contains("as_int")
                             ? expr.at("hint").at("as_int").get<std::int64_t>()
                             : 1);
      in.dynamic.push_back(true);
      in.symbols.push_back(symbol_of(expr.at("expr_str").get<std::string>()));
      if (in.dynamic.size() == 1) first_symbol = in.symbols.back();
    }
  }
  return in;
}

// The symbols' ranges, and the batch's where its symbol is one.
void read_ranges(const nlohmann::json& doc, const std::string& batch_symbol,
                 ProgramSignature& sig) {
  // torch.export.Dim.DYNAMIC and Dim("batch") without a max write the range's missing end as
  // null (the file says [2, inf]); older writers as a huge number (int_oo). Both: none.
  const auto ranges = doc.value("range_constraints", nlohmann::json::object());
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    const auto bound = [&](const char* field, std::int64_t otherwise) {
      const auto f = it.value().find(field);
      return f != it.value().end() && f->is_number_integer() ? f->get<std::int64_t>() : otherwise;
    };
    SymbolRange r;
    r.min = std::max<std::int64_t>(1, bound("min_val", 1));
    const auto max = bound("max_val", 0);
    r.max = max >= (std::int64_t{1} << 62) ? 0 : max;
    sig.ranges.emplace_back(it.key(), r);
  }
  if (sig.dynamic_batch)
    for (const auto& [symbol, r] : sig.ranges)
      if (symbol == batch_symbol) {
        sig.batch_min = r.min;
        sig.batch_max = r.max;
      }
}
}  // namespace

ProgramSignature read_program_signature(const std::string& path) {
  const nlohmann::json doc = read_program_json(path);
  ProgramSignature sig;
  try {
    sig.torch_version = doc.value("torch_version", "");
    const auto& gm = doc.at("graph_module");
    const auto& graph = gm.at("graph");
    const auto& tensors = graph.at("tensor_values");
    for (const auto& node : graph.value("nodes", nlohmann::json::array())) {
      const std::string target = node.value("target", "");
      sig.convolutional |= target.find("aten.conv") != std::string::npos ||
                           target.find("aten.convolution") != std::string::npos;
      sig.linear |= target.find("aten.linear") != std::string::npos ||
                    target.find("aten.addmm") != std::string::npos ||
                    target.find("aten.mm.") != std::string::npos;
    }
    std::string batch_symbol;
    bool batch_consistent = true;
    for (const auto& spec : gm.at("signature").at("input_specs")) {
      std::string first_symbol;
      std::optional<ProgramInput> in = program_input(path, spec, tensors, first_symbol);
      if (!in) continue;
      if (sig.inputs.empty()) batch_symbol = first_symbol;
      batch_consistent &= !in->sizes.empty() && first_symbol == batch_symbol;
      sig.inputs.push_back(std::move(*in));
    }
    if (sig.inputs.empty()) throw ModelError("model '" + path + "': the program takes no inputs");
    sig.exported_batch = sig.inputs[0].sizes.empty() ? 1 : sig.inputs[0].sizes[0];
    sig.dynamic_batch = !batch_symbol.empty() && batch_consistent;
    read_ranges(doc, batch_symbol, sig);
  } catch (const ModelError&) {
    throw;
  } catch (const std::exception& e) {
    throw ModelError("model '" + path + "': a torch.export program whose schema this torchperf "
                     "does not read (" + std::string(e.what()) + "; exported by torch " +
                     sig.torch_version + ")");
  }
  return sig;
}

std::optional<SymbolRange> ProgramSignature::range_of(std::size_t input, std::size_t dim) const {
  if (input >= inputs.size() || dim >= inputs[input].dynamic.size() || !inputs[input].dynamic[dim])
    return std::nullopt;
  const std::string& symbol = dim < inputs[input].symbols.size() ? inputs[input].symbols[dim] : "";
  for (const auto& [name, r] : ranges)
    if (name == symbol) return r;
  return SymbolRange{};  // dynamic, its range not written: 1.. and no upper bound
}

void check_program_takes(const ProgramSignature& program, const InputSpec& spec,
                         const std::vector<NamedDim>& dims, const std::string& model) {
  const auto distribution_of = [&](const std::string& name) -> const LengthDistribution* {
    for (const auto& d : dims)
      if (d.name == name) return &d.distribution;
    return nullptr;
  };
  for (std::size_t i = 0; i < spec.tensors.size() && i < program.inputs.size(); ++i) {
    const ProgramInput& in = program.inputs[i];
    const auto& names = spec.tensors[i].dim_names;
    for (std::size_t d = 0; d < names.size(); ++d) {
      const LengthDistribution* dist = names[d].empty() ? nullptr : distribution_of(names[d]);
      if (!dist) continue;
      const std::size_t at = d + 1;  // the program's dimensions count the batch
      if (at >= in.sizes.size())
        throw WorkloadError(fmt::format(
            "model '{}': input '{}' has {} dimensions with the batch, --input names a {}th ({})",
            model, in.name, in.sizes.size(), at + 1, names[d]));
      const auto range = program.range_of(i, at);
      if (!range)
        throw WorkloadError(fmt::format(
            "model '{}': input '{}' dimension {} was exported static (size {}), so {}={} cannot "
            "vary in it: export with that dimension dynamic, e.g. dynamic_shapes={{'{}': {{0: "
            "batch, {}: torch.export.Dim('{}', min={}, max={})}}}}",
            model, in.name, at, in.sizes[at], names[d], dist->text, in.name, at, names[d],
            std::max<std::int64_t>(2, dist->min), dist->max));
      if (dist->min < range->min || (range->max > 0 && dist->max > range->max))
        throw WorkloadError(fmt::format(
            "model '{}': {}={} gives sizes {}..{}, outside the range input '{}' dimension {} was "
            "exported with ({}..{}): give a distribution within it, or export with a wider Dim",
            model, names[d], dist->text, dist->min, dist->max, in.name, at, range->min,
            range->max > 0 ? std::to_string(range->max) : std::string("any")));
    }
  }
}

InputSpec ProgramSignature::input_spec() const {
  InputSpec spec;
  for (const auto& in : inputs) {
    TensorSpec t;
    t.dtype = in.dtype;
    t.shape.assign(in.sizes.begin() + (in.sizes.empty() ? 0 : 1), in.sizes.end());
    spec.tensors.push_back(t);
  }
  return spec;
}

std::string ProgramSignature::describe() const {
  std::string out;
  for (const auto& in : inputs) {
    out += (out.empty() ? "" : ", ") + in.name + ": " + to_string(in.dtype) + "[";
    for (std::size_t d = 0; d < in.sizes.size(); ++d) {
      if (!in.dynamic[d] || (d == 0 && dynamic_batch)) {
        out += (d ? "," : "") + (in.dynamic[d] ? std::string("batch") : std::to_string(in.sizes[d]));
        continue;
      }
      const auto input = static_cast<std::size_t>(&in - inputs.data());
      const SymbolRange r = range_of(input, d).value_or(SymbolRange{});
      out += fmt::format("{}{}..{}", d ? "," : "", r.min, r.max > 0 ? std::to_string(r.max) : "");
    }
    out += "]";
  }
  if (dynamic_batch)
    out += fmt::format(" (batch {}..{})", batch_min,
                       batch_max > 0 ? std::to_string(batch_max) : std::string("any"));
  else
    out += fmt::format(" (static batch {})", exported_batch);
  return out;
}

}  // namespace torchperf
