// The training datasets: synthetic CIFAR-like images, a folder of JPEG/PNG images (one
// sub-folder per class), or tensors saved from Python. Each example is made the way a PyTorch
// input pipeline makes it: decode, resize to the model's size, and either normalise to float32 on
// the host or keep 8-bit values for normalising after the copy (the transfer knob).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "torchperf/config/training_plan.h"

namespace torchperf {

struct DataSpec {
  // synthetic-cifar | synthetic-features:N | images:DIR | tensors:FILE
  std::string source = "synthetic-cifar";
  int image_size = 224;                     // images are resized to image_size x image_size
  std::uint64_t seed = 0;
  bool strict = false;  // a corrupt image is an error, not a skipped example
  static DataSpec parse(const std::string& source);  // UsageError for an unknown kind
};

// The normalisation of every image pipeline here (torchvision's Normalize(0.5, 0.5)).
inline constexpr double kImageMean = 0.5;
inline constexpr double kImageStd = 0.5;

struct Example {
  at::Tensor input;   // CHW: uint8 (transfer=uint8) or normalised float32; or a vector
  at::Tensor target;  // int64 scalar (a class) or a float tensor (regression)
};

class TrainingData {
 public:
  virtual ~TrainingData() = default;
  virtual std::size_t size() const = 0;
  virtual std::string describe() const = 0;
  // Classes for class targets, 0 for regression targets.
  virtual std::int64_t classes() const = 0;
  // Whether examples are 8-bit images, so that transfer=uint8 applies.
  virtual bool uint8_images() const = 0;
  // Throws ImageDecodeError for an example that cannot be made (a corrupt file).
  virtual Example get(std::size_t index, Transfer transfer) const = 0;
};

// Throws UsageError for an empty or missing folder, a folder without class sub-folders, or a
// tensors file that does not hold (inputs, targets) of the same length.
std::unique_ptr<TrainingData> open_training_data(const DataSpec& spec);
// --data's default for a model: synthetic-features:N for a built-in that takes a vector of N
// (builtin:mlp: 784), else synthetic-cifar. UsageError for an unknown built-in.
std::string default_training_data(const std::string& model);

// The pipeline's image step, shared by every image dataset and the loader benchmark: HWC uint8
// pixels resized (bilinear) to size x size, as CHW float32 normalised, or CHW uint8.
at::Tensor prepare_image(const std::uint8_t* rgb, int height, int width, int size,
                         Transfer transfer);
// What transfer=uint8 does after the copy: bytes to normalised float32, on the tensor's device.
at::Tensor normalize_after_copy(const at::Tensor& uint8_batch);

}  // namespace torchperf
