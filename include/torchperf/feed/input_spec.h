// How a model is fed when the user gives shapes instead of tensors: one entry per forward argument,
// e.g. "3x224x224" or "int64:128@0..30522;int64:128@1..2". The batch dimension is prepended. A
// dimension may be named ("int64:S@0..30522"): its sizes then come from a distribution (--dim).
// An entry may name forward's argument it feeds ("attention_mask=int64:S@1..2"), in any order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchperf {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kUInt8, kBool };
std::string to_string(DType dtype);
DType parse_dtype(const std::string& name);  // throws UsageError naming the accepted names
bool is_floating(DType dtype);

struct TensorSpec {
  std::string argument;  // forward's argument it feeds, "" for the next one in order
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;  // without the batch dimension; 0 where the dimension is named
  std::vector<std::string> dim_names;  // one per dimension: "" for a fixed size, else its name
  // Values are drawn from [low, high): integers uniformly, floats from a unit normal when no range.
  bool has_range = false;
  double low = 0;
  double high = 0;
};

struct InputSpec {
  std::vector<TensorSpec> tensors;
  // The named dimensions, each once, in the order they first appear.
  std::vector<std::string> named_dims() const;
  // Whether an entry names forward's argument it feeds.
  bool names_arguments() const;
};

// Grammar: TENSOR (';' TENSOR)*, TENSOR = [ARGUMENT '='] [DTYPE ':'] DIM ('x' DIM)*
// ['@' LOW '..' HIGH], DIM a positive integer or a name (a letter, then letters, digits or '_'),
// ARGUMENT a Python identifier.
InputSpec parse_input_spec(const std::string& text);
// The spec in forward's order, given its arguments' names and how many have no default: the
// entries that name an argument are put in its place. Throws WorkloadError for a name forward does
// not take, one given twice, an unnamed entry after a named one, or an argument left out before
// one that is given (torchperf feeds forward positionally) or without a default.
InputSpec in_forward_order(const InputSpec& spec, const std::vector<std::string>& arguments,
                           std::size_t required, const std::string& model);
// The spec with each named dimension set to its size here (sizes maps a name to a size); throws
// UsageError for a name sizes lacks, saying --dim is what gives it.
InputSpec with_sizes(const InputSpec& spec, const std::vector<std::pair<std::string, std::int64_t>>& sizes);
std::string to_string(const InputSpec& spec);

}  // namespace torchperf
