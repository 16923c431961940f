// Decoding image files (JPEG with libjpeg-turbo, PNG with libpng) into 8-bit RGB pixels for the
// image-folder dataset. Torch-free: the dataset turns the pixels into tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "torchperf/error.h"

namespace torchperf {

// A file that is not a decodable image (truncated, corrupt, another format under the name).
class ImageDecodeError : public WorkloadError {
 public:
  using WorkloadError::WorkloadError;
};

struct DecodedImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // height x width x 3, row-major (HWC)
};

// By extension, case-insensitive: .jpg, .jpeg, .png.
bool is_image_file(const std::string& path);
// Reads and decodes a file; grey and palette images become RGB, alpha is dropped. Throws
// ImageDecodeError naming the file and what the decoder said.
DecodedImage decode_image_file(const std::string& path);
DecodedImage decode_image(const std::vector<std::uint8_t>& bytes, const std::string& name);

}  // namespace torchperf
