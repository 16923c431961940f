#include "torchperf/train/image_codec.h"

// jpeglib.h needs size_t and FILE declared first.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace torchperf {
namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

// libjpeg reports fatal errors through error_exit, which must not return: longjmp back to the
// decoder with the message, the documented way for a C library.
struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

// Warnings (a truncated file, corrupt data that libjpeg would paper over with grey) are failures
// too: a training set should not silently contain half-grey images.
void jpeg_warn(j_common_ptr info, int level) {
  if (level < 0) jpeg_fail(info);
}

DecodedImage decode_jpeg(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  jpeg_decompress_struct info{};
  JpegError error{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jpeg_fail;
  error.manager.emit_message = jpeg_warn;
  DecodedImage image;
  // Nothing with a destructor is created between setjmp and a possible longjmp.
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    throw ImageDecodeError("image '" + name + "': not a valid JPEG (" + error.message + ")");
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  image.width = static_cast<int>(info.output_width);
  image.height = static_cast<int>(info.output_height);
  image.rgb.resize(static_cast<std::size_t>(image.width) * image.height * 3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image.rgb.data() + static_cast<std::size_t>(info.output_scanline) * image.width * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return image;
}

DecodedImage decode_png(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  // libpng's simplified API: no setjmp of our own.
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
    throw ImageDecodeError("image '" + name + "': not a valid PNG (" + png.message + ")");
  png.format = PNG_FORMAT_RGB;
  DecodedImage image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.rgb.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.rgb.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    throw ImageDecodeError("image '" + name + "': not a valid PNG (" + message + ")");
  }
  return image;
}

}  // namespace

bool is_image_file(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

DecodedImage decode_image(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  static const std::uint8_t kPng[] = {0x89, 'P', 'N', 'G'};
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), kPng, 4) == 0) return decode_png(bytes, name);
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) return decode_jpeg(bytes, name);
  throw ImageDecodeError("image '" + name + "': neither a JPEG nor a PNG (" +
                         std::to_string(bytes.size()) + " bytes, unknown signature)");
}

DecodedImage decode_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImageDecodeError("image '" + path + "': cannot be read");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  return decode_image(bytes, path);
}

}  // namespace torchperf
