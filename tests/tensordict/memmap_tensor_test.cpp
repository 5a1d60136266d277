// MemoryMappedTensor: tensors whose storage is a mapped file of raw little-endian elements
// (Python tensordict's MemoryMappedTensor.empty / from_tensor / from_filename).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <string>

#include <tensordict/tensordict.h>

#include "support/temp_dir.h"
#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
namespace fs = std::filesystem;

// Random values of `dtype`, covering its range well enough to catch a wrong element size.
torch::Tensor random_tensor(Shape shape, torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBool:
      return torch::randint(0, 2, shape).to(torch::kBool);
    case torch::kByte:
      return torch::randint(0, 256, shape).to(torch::kByte);
    case torch::kLong:
      return torch::randint(-(int64_t{1} << 40), int64_t{1} << 40, shape, torch::kLong);
    default:
      return torch::randn(shape, torch::TensorOptions().dtype(dtype));
  }
}

// The bytes of a contiguous CPU tensor, as they should appear in its file.
std::string bytes_of(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

class MemoryMappedTensorTest : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(0); }
  TempDir dir_;
};

// ---- every dtype --------------------------------------------------------------------------------

class MemoryMappedTensorDtypeTest : public ::testing::TestWithParam<torch::Dtype> {
 protected:
  void SetUp() override { torch::manual_seed(0); }
  TempDir dir_;
};

TEST_P(MemoryMappedTensorDtypeTest, EmptyIsZeroFilledAndSizesTheFileExactly) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::empty(file, {3, 4, 5}, GetParam());
  EXPECT_EQ(t.scalar_type(), GetParam());
  EXPECT_EQ(shape_of(t), (Shape{3, 4, 5}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(torch::equal(t, torch::zeros({3, 4, 5}, GetParam())));
  EXPECT_EQ(fs::file_size(file), 60u * c10::elementSize(GetParam()));
}

TEST_P(MemoryMappedTensorDtypeTest, FromTensorWritesTheRawElementsWithNoHeader) {
  const std::string file = dir_ / "t.memmap";
  auto src = random_tensor({7, 3}, GetParam());
  auto t = MemoryMappedTensor::from_tensor(file, src);
  EXPECT_TRUE(torch::equal(t, src));
  EXPECT_EQ(read_file_bytes(file), bytes_of(src));
}

TEST_P(MemoryMappedTensorDtypeTest, FromFilenameReadsBackWhatFromTensorWrote) {
  const std::string file = dir_ / "t.memmap";
  auto src = random_tensor({2, 3, 4}, GetParam());
  MemoryMappedTensor::from_tensor(file, src);
  for (auto mode : {MemmapMode::kReadWrite, MemmapMode::kReadOnly}) {
    auto back = MemoryMappedTensor::from_filename(file, GetParam(), {2, 3, 4}, mode);
    EXPECT_EQ(back.scalar_type(), GetParam());
    EXPECT_EQ(shape_of(back), (Shape{2, 3, 4}));
    EXPECT_TRUE(torch::equal(back, src));
  }
}

TEST_P(MemoryMappedTensorDtypeTest, WritesThroughAReadWriteMappingReachTheFile) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::empty(file, {4, 6}, GetParam());
  auto row = random_tensor({6}, GetParam());
  t.index_put_({2}, row);
  MemoryMappedTensor::flush(t);
  auto expected = torch::zeros({4, 6}, GetParam());
  expected.index_put_({2}, row);
  EXPECT_EQ(read_file_bytes(file), bytes_of(expected));
  EXPECT_TRUE(torch::equal(MemoryMappedTensor::from_filename(file, GetParam(), {4, 6}), expected));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MemoryMappedTensorDtypeTest,
                         ::testing::Values(torch::kFloat, torch::kDouble, torch::kLong,
                                           torch::kByte, torch::kBool),
                         [](const ::testing::TestParamInfo<torch::Dtype>& info) {
                           return std::string(c10::toString(info.param));
                         });

// ---- file layout --------------------------------------------------------------------------------

TEST_F(MemoryMappedTensorTest, FileIsLittleEndian) {
  const std::string file = dir_ / "t.memmap";
  MemoryMappedTensor::from_tensor(file, torch::tensor({int64_t{0x0102030405060708}}));
  EXPECT_EQ(read_file_bytes(file), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  MemoryMappedTensor::from_tensor(file, torch::tensor({1.0f}));
  EXPECT_EQ(read_file_bytes(file), std::string("\x00\x00\x80\x3f", 4));
}

TEST_F(MemoryMappedTensorTest, FromTensorStoresANonContiguousTensorInRowMajorOrder) {
  const std::string file = dir_ / "t.memmap";
  auto src = torch::arange(12, torch::kLong).reshape({3, 4}).t();  // [4, 3], strides [1, 4]
  auto t = MemoryMappedTensor::from_tensor(file, src);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(torch::equal(t, src));
  EXPECT_EQ(read_file_bytes(file), bytes_of(src.contiguous()));
}

TEST_F(MemoryMappedTensorTest, FromTensorOfAnExpandedTensorWritesEveryElement) {
  const std::string file = dir_ / "t.memmap";
  auto src = torch::tensor({1.0f, 2.0f}).expand({3, 2});  // stride 0 on dim 0
  MemoryMappedTensor::from_tensor(file, src);
  EXPECT_EQ(fs::file_size(file), 6u * sizeof(float));
  EXPECT_TRUE(torch::equal(MemoryMappedTensor::from_filename(file, torch::kFloat, {3, 2}),
                           src.contiguous()));
}

TEST_F(MemoryMappedTensorTest, EmptyTruncatesAnExistingFile) {
  const std::string file = dir_ / "t.memmap";
  write_file_bytes(file, std::string(100, '\x7f'));
  auto t = MemoryMappedTensor::empty(file, {2}, torch::kInt);
  EXPECT_EQ(fs::file_size(file), 8u);
  EXPECT_TRUE(torch::equal(t, torch::zeros({2}, torch::kInt)));
}

TEST_F(MemoryMappedTensorTest, ScalarShapeHoldsOneElement) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::from_tensor(file, torch::tensor(2.5, torch::kDouble));
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(fs::file_size(file), sizeof(double));
  EXPECT_EQ(MemoryMappedTensor::from_filename(file, torch::kDouble, {}).item<double>(), 2.5);
}

TEST_F(MemoryMappedTensorTest, ZeroElementShapesGiveEmptyFilesAndMapBack) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::empty(file, {0, 3}, torch::kFloat);
  EXPECT_EQ(shape_of(t), (Shape{0, 3}));
  EXPECT_EQ(fs::file_size(file), 0u);
  auto back = MemoryMappedTensor::from_filename(file, torch::kFloat, {4, 0});
  EXPECT_EQ(shape_of(back), (Shape{4, 0}));
  EXPECT_EQ(back.numel(), 0);
  auto copy = MemoryMappedTensor::from_tensor(dir_ / "u.memmap", torch::ones({0}));
  EXPECT_EQ(copy.numel(), 0);
  EXPECT_EQ(fs::file_size(dir_ / "u.memmap"), 0u);
}

// ---- modes --------------------------------------------------------------------------------------

TEST_F(MemoryMappedTensorTest, WritesAreVisibleToAnotherMappingOfTheSameFileBeforeFlush) {
  const std::string file = dir_ / "t.memmap";
  auto a = MemoryMappedTensor::empty(file, {8}, torch::kFloat);
  auto b = MemoryMappedTensor::from_filename(file, torch::kFloat, {8});
  a.fill_(3.0);
  EXPECT_TRUE(torch::equal(b, torch::full({8}, 3.0f)));
}

TEST_F(MemoryMappedTensorTest, ReadOnlyMappingKeepsWritesInTheProcess) {
  const std::string file = dir_ / "t.memmap";
  auto src = torch::arange(6, torch::kFloat);
  MemoryMappedTensor::from_tensor(file, src);
  auto t = MemoryMappedTensor::from_filename(file, torch::kFloat, {6}, MemmapMode::kReadOnly);
  t.fill_(-1.0);
  MemoryMappedTensor::flush(t);
  EXPECT_TRUE(torch::equal(t, torch::full({6}, -1.0f)));
  EXPECT_EQ(read_file_bytes(file), bytes_of(src));
  EXPECT_TRUE(torch::equal(MemoryMappedTensor::from_filename(file, torch::kFloat, {6}), src));
}

TEST_F(MemoryMappedTensorTest, ReadOnlyMappingOpensAFileWithoutWritePermission) {
  const std::string file = dir_ / "t.memmap";
  MemoryMappedTensor::from_tensor(file, torch::ones({3}));
  ASSERT_EQ(chmod(file.c_str(), 0444), 0);
  auto t = MemoryMappedTensor::from_filename(file, torch::kFloat, {3}, MemmapMode::kReadOnly);
  EXPECT_TRUE(torch::equal(t, torch::ones({3})));
}

// ---- lifetime -----------------------------------------------------------------------------------

TEST_F(MemoryMappedTensorTest, ViewKeepsTheMappingAliveAfterTheFirstTensorIsGone) {
  const std::string file = dir_ / "t.memmap";
  torch::Tensor view;
  {
    auto t = MemoryMappedTensor::from_tensor(file, torch::arange(10, torch::kLong));
    view = t.slice(0, 5, 10);
  }
  EXPECT_TRUE(torch::equal(view, torch::arange(5, 10, torch::kLong)));
  view.fill_(0);  // still the file's pages
  EXPECT_TRUE(torch::equal(MemoryMappedTensor::from_filename(file, torch::kLong, {10}).slice(0, 5),
                           torch::zeros({5}, torch::kLong)));
}

TEST_F(MemoryMappedTensorTest, MappingStaysReadableAfterTheFileIsRemoved) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::from_tensor(file, torch::arange(4, torch::kFloat));
  fs::remove(file);
  EXPECT_TRUE(torch::equal(t, torch::arange(4, torch::kFloat)));
}

// ---- is_memmap and filename ---------------------------------------------------------------------

TEST_F(MemoryMappedTensorTest, IsMemmapAndFilenameDescribeAMappedTensor) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::empty(file, {4, 4}, torch::kFloat);
  EXPECT_TRUE(MemoryMappedTensor::is_memmap(t));
  EXPECT_EQ(MemoryMappedTensor::filename(t), file);
  auto loaded =
      MemoryMappedTensor::from_filename(file, torch::kFloat, {4, 4}, MemmapMode::kReadOnly);
  EXPECT_TRUE(MemoryMappedTensor::is_memmap(loaded));
  EXPECT_EQ(MemoryMappedTensor::filename(loaded), file);
}

TEST_F(MemoryMappedTensorTest, ViewsOfAMappedTensorAreMappedToo) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::empty(file, {4, 4}, torch::kFloat);
  for (const auto& view : {t.index({1}), t.t(), t.view({16}), t.slice(1, 1, 3), t.detach()}) {
    EXPECT_TRUE(MemoryMappedTensor::is_memmap(view));
    EXPECT_EQ(MemoryMappedTensor::filename(view), file);
  }
}

TEST_F(MemoryMappedTensorTest, OrdinaryTensorsAndCopiesAreNotMapped) {
  auto t = MemoryMappedTensor::empty(dir_ / "t.memmap", {4}, torch::kFloat);
  for (const auto& other : {torch::zeros({4}), t.clone(), t + 1, torch::Tensor()}) {
    EXPECT_FALSE(MemoryMappedTensor::is_memmap(other));
    EXPECT_EQ(MemoryMappedTensor::filename(other), std::nullopt);
  }
  EXPECT_NO_THROW(MemoryMappedTensor::flush(torch::zeros({4})));
}

TEST_F(MemoryMappedTensorTest, ZeroElementTensorIsStillMapped) {
  const std::string file = dir_ / "t.memmap";
  auto t = MemoryMappedTensor::empty(file, {0}, torch::kFloat);
  EXPECT_TRUE(MemoryMappedTensor::is_memmap(t));
  EXPECT_EQ(MemoryMappedTensor::filename(t), file);
  EXPECT_NO_THROW(MemoryMappedTensor::flush(t));
}

// ---- errors -------------------------------------------------------------------------------------

TEST_F(MemoryMappedTensorTest, FromFilenameOfAMissingFileThrowsNamingIt) {
  const std::string file = dir_ / "missing.memmap";
  EXPECT_THAT([&] { MemoryMappedTensor::from_filename(file, torch::kFloat, {2}); },
              ThrowsMessage<Error>(
                  AllOf(HasSubstr("cannot open"), HasSubstr(file), HasSubstr("No such file"))));
  EXPECT_THAT(
      [&] { MemoryMappedTensor::from_filename(file, torch::kFloat, {2}, MemmapMode::kReadOnly); },
      ThrowsMessage<Error>(HasSubstr(file)));
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(MemoryMappedTensorTest, FromFilenameOfAFileOfTheWrongSizeNamesTheFileAndBothSizes) {
  const std::string file = dir_ / "t.memmap";
  MemoryMappedTensor::from_tensor(file, torch::zeros({3}));  // 12 bytes
  EXPECT_THAT([&] { MemoryMappedTensor::from_filename(file, torch::kFloat, {4}); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr(file), HasSubstr("holds 12 bytes"),
                                              HasSubstr("[4]"), HasSubstr("needs 16"))));
  EXPECT_THAT([&] { MemoryMappedTensor::from_filename(file, torch::kDouble, {3}); },
              ThrowsMessage<ShapeError>(AllOf(HasSubstr("12"), HasSubstr("24"))));
}

TEST_F(MemoryMappedTensorTest, FromFilenameOfADirectoryThrowsNamingIt) {
  const std::string folder = dir_ / "folder";
  fs::create_directory(folder);
  for (auto mode : {MemmapMode::kReadWrite, MemmapMode::kReadOnly}) {
    EXPECT_THAT([&] { MemoryMappedTensor::from_filename(folder, torch::kFloat, {0}, mode); },
                ThrowsMessage<Error>(HasSubstr(folder)));
  }
}

TEST_F(MemoryMappedTensorTest, EmptyOfADirectoryOrAMissingFolderThrowsNamingThePath) {
  EXPECT_THAT(
      [&] { MemoryMappedTensor::empty(dir_.path().string(), {2}, torch::kFloat); },
      ThrowsMessage<Error>(AllOf(HasSubstr("cannot create"), HasSubstr(dir_.path().string()))));
  const std::string file = dir_ / "no/such/folder/t.memmap";
  EXPECT_THAT([&] { MemoryMappedTensor::empty(file, {2}, torch::kFloat); },
              ThrowsMessage<Error>(HasSubstr(file)));
}

TEST_F(MemoryMappedTensorTest, NegativeDimThrowsShapeErrorAndCreatesNothing) {
  const std::string file = dir_ / "t.memmap";
  EXPECT_THAT(
      [&] {
        MemoryMappedTensor::empty(file, {2, -1}, torch::kFloat);
      },
      ThrowsMessage<ShapeError>(AllOf(HasSubstr("[2, -1]"), HasSubstr("negative"))));
  EXPECT_FALSE(fs::exists(file));
  MemoryMappedTensor::from_tensor(file, torch::zeros({2}));
  EXPECT_THAT([&] { MemoryMappedTensor::from_filename(file, torch::kFloat, {-2}); },
              ThrowsMessage<ShapeError>(HasSubstr("negative")));
}

TEST_F(MemoryMappedTensorTest, ShapeWhoseByteSizeOverflowsThrowsShapeError) {
  const std::string file = dir_ / "t.memmap";
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(
      [&] {
        MemoryMappedTensor::empty(file, {big, big}, torch::kFloat);
      },
      ThrowsMessage<ShapeError>(HasSubstr("too large")));
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(MemoryMappedTensorTest, FromTensorOfAnUndefinedTensorThrowsValueError) {
  EXPECT_THROW(MemoryMappedTensor::from_tensor(dir_ / "t.memmap", torch::Tensor()), ValueError);
}

}  // namespace
