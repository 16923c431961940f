#include "torchperf/train/image_codec.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace torchperf {
namespace {

using testing::fixture;

TEST(ImageCodecTest, DecodesAJpegToRgbPixelsOfItsSize) {
  const DecodedImage image = decode_image_file(fixture("images/cat/0.jpg"));
  EXPECT_EQ(image.width, 20);
  EXPECT_EQ(image.height, 16);
  EXPECT_EQ(image.rgb.size(), 20u * 16u * 3u);
}

TEST(ImageCodecTest, DecodesAPngToRgbPixelsOfItsSize) {
  const DecodedImage image = decode_image_file(fixture("images/cat/2.png"));
  EXPECT_EQ(image.width, 20);
  EXPECT_EQ(image.height, 16);
  EXPECT_EQ(image.rgb.size(), 20u * 16u * 3u);
}

TEST(ImageCodecTest, ACutShortJpegIsAnErrorNamingTheFile) {
  try {
    decode_image_file(fixture("images_corrupt/dog/broken.jpg"));
    FAIL() << "expected ImageDecodeError";
  } catch (const ImageDecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.jpg"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a valid JPEG"), std::string::npos);
  }
}

TEST(ImageCodecTest, BytesThatAreNeitherJpegNorPngAreRefused) {
  EXPECT_THROW(decode_image({'h', 'e', 'l', 'l', 'o'}, "hello.jpg"), ImageDecodeError);
  EXPECT_THROW(decode_image({0x89, 'P', 'N', 'G', 0, 0}, "short.png"), ImageDecodeError);
}

TEST(ImageCodecTest, RecognisesImageFilesByExtensionInAnyCase) {
  EXPECT_TRUE(is_image_file("a/B.JPG"));
  EXPECT_TRUE(is_image_file("x.jpeg"));
  EXPECT_TRUE(is_image_file("x.png"));
  EXPECT_FALSE(is_image_file("x.txt"));
}

}  // namespace
}  // namespace torchperf
