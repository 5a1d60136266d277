// Memmap folders exchanged with Python tensordict (docs/memmap.md, "Exchanging with Python"):
// folders Python tensordict 0.4.0 wrote (tests/data/memmap/python_tensordict_0_4, a copy of
// ../shared/fixtures/python_tensordict) load with the values it recorded; what tdrl writes has
// the keys and value types of Python's meta.json files; folders tdrl 0.1 wrote still load.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensordict.h>

#include "support/build_paths.h"
#include "support/temp_dir.h"
#include "support/tensordict_fixtures.h"

namespace {

using namespace tensordict::testing;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

const fs::path kPython =
    fs::path(tdrl::testing::test_data_dir()) / "memmap" / "python_tensordict_0_4";
const fs::path kTdrl01 = fs::path(tdrl::testing::test_data_dir()) / "memmap" / "tdrl_0_1";

json read_json(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Loads a checked-in folder without ever writing to it.
TensorDict load_data(const fs::path& folder) {
  return TensorDict::load_memmap(folder.string(), MemmapMode::kReadOnly);
}

torch::Dtype dtype_named(const std::string& name) {
  static const std::map<std::string, torch::Dtype> table = {
      {"torch.float32", torch::kFloat}, {"torch.float64", torch::kDouble},
      {"torch.float16", torch::kHalf},  {"torch.int64", torch::kLong},
      {"torch.int32", torch::kInt},     {"torch.uint8", torch::kByte},
      {"torch.bool", torch::kBool}};
  return table.at(name);
}

NestedKey dotted_key(const std::string& name) {
  std::stringstream in(name);
  std::string part;
  std::getline(in, part, '.');
  NestedKey key(part);
  while (std::getline(in, part, '.')) key = key.join(NestedKey(part));
  return key;
}

// Checks `td` against the summary make_fixtures.py recorded: batch size, and each leaf's
// shape, dtype, sum and first element (and no leaf more).
void expect_matches_summary(const TensorDict& td, const json& summary) {
  EXPECT_EQ(td.batch_size(), summary["batch_size"].get<BatchSize>());
  for (const auto& [name, leaf] : summary["leaves"].items()) {
    SCOPED_TRACE(name);
    const torch::Tensor t = td.get(dotted_key(name));
    EXPECT_EQ(shape_of(t), leaf["shape"].get<Shape>());
    EXPECT_EQ(t.scalar_type(), dtype_named(leaf["dtype"].get<std::string>()));
    EXPECT_DOUBLE_EQ(t.to(torch::kDouble).sum().item<double>(), leaf["sum"].get<double>());
    if (t.numel() > 0) {
      EXPECT_DOUBLE_EQ(t.reshape({-1})[0].to(torch::kDouble).item<double>(),
                       leaf["first"].get<double>());
    }
  }
  EXPECT_EQ(td.keys(/*include_nested=*/true, /*leaves_only=*/true).size(),
            summary["leaves"].size());
}

// Checks that the folder `ours` has the layout of the folder `theirs`: the same files, and
// meta.json files with the same keys holding values of the same JSON types. Sizes, dtypes and type
// names must be equal too; the root device only when `same_device`, leaf bytes only when
// `same_bytes`. Besides tdrl's own "_tdrl", `ours` may hold what format version 1 added to the
// layout of 0.4 (tdrl writes it; Python 0.4 skips the fields that are no entry objects, and reads
// the leaf entries' shape and dtype only).
void expect_same_layout(const fs::path& ours, const fs::path& theirs, bool same_device,
                        bool same_bytes) {
  SCOPED_TRACE(ours.string());
  json a = read_json(ours / "meta.json");
  const json b = read_json(theirs / "meta.json");
  for (const char* added : {"_tdrl", "_format_version", "_class", "stack_dim_name"}) a.erase(added);
  for (auto& [k, v] : a.items())
    if (v.is_object()) v.erase("is_nested");
  std::set<std::string> a_keys;
  std::set<std::string> b_keys;
  for (const auto& [k, v] : a.items()) a_keys.insert(k);
  for (const auto& [k, v] : b.items()) b_keys.insert(k);
  ASSERT_EQ(a_keys, b_keys);
  for (const auto& key : b_keys) {
    SCOPED_TRACE(key);
    const json& x = a[key];
    const json& y = b[key];
    ASSERT_EQ(x.type_name(), std::string(y.type_name()));
    if (x.is_object()) {
      std::set<std::string> xk;
      std::set<std::string> yk;
      for (const auto& [k, v] : x.items()) xk.insert(k);
      for (const auto& [k, v] : y.items()) yk.insert(k);
      EXPECT_EQ(xk, yk);
      EXPECT_EQ(x, y);  // {"device", "shape", "dtype"} of a leaf, {"type"} of a nested folder
    } else if (key != "device" || same_device) {
      EXPECT_EQ(x, y);
    }
  }
  // The same files; the leaves' bytes; the subfolders, recursively.
  std::set<std::string> a_files;
  std::set<std::string> b_files;
  for (const auto& e : fs::directory_iterator(ours)) a_files.insert(e.path().filename().string());
  for (const auto& e : fs::directory_iterator(theirs)) b_files.insert(e.path().filename().string());
  ASSERT_EQ(a_files, b_files);
  for (const auto& name : b_files) {
    if (fs::is_directory(theirs / name)) {
      expect_same_layout(ours / name, theirs / name, same_device, same_bytes);
    } else if (same_bytes && name != "meta.json") {
      EXPECT_EQ(read_bytes(ours / name), read_bytes(theirs / name)) << name;
    }
  }
}

class MemmapPythonTest : public ::testing::Test {
 protected:
  // `json` as `<folder>/meta.json`, the folder made first.
  static void write_meta(const std::string& folder, const std::string& json) {
    fs::create_directories(folder);
    std::ofstream(folder + "/meta.json") << json;
  }
  TempDir dir_;
  const std::string prefix_ = dir_ / "td";
};

// ---- folders Python wrote -----------------------------------------------------------------------

class PythonFolderTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(PythonFolderTest, LoadsWithTheValuesPythonRecorded) {
  const json expected = read_json(kPython / "expected.json")[GetParam()];
  const TensorDict td = load_data(kPython / GetParam());
  if (!expected.contains("members")) {
    expect_matches_summary(td, expected);
    EXPECT_EQ(td.device(), torch::Device(torch::kCPU));  // Python 0.4 records "cpu"
    return;
  }
  ASSERT_TRUE(td.is_lazy_stack());
  EXPECT_EQ(td.batch_size(), expected["batch_size"].get<BatchSize>());
  LazyStackedTensorDict lazy(td);
  EXPECT_EQ(lazy.stack_dim(), expected["stack_dim"].get<int64_t>());
  ASSERT_EQ(lazy.tensordicts().size(), expected["members"].size());
  for (size_t i = 0; i < lazy.tensordicts().size(); ++i) {
    SCOPED_TRACE("member " + std::to_string(i));
    expect_matches_summary(lazy.tensordicts()[i], expected["members"][i]);
  }
}

TEST_P(PythonFolderTest, SavedAgainByTdrlHasPythonsLayoutAndBytes) {
  const TensorDict td = load_data(kPython / GetParam());
  const fs::path out = dir_.path() / GetParam();
  td.save(out.string());
  expect_same_layout(out, kPython / GetParam(), /*same_device=*/true, /*same_bytes=*/true);
  expect_same(td, TensorDict::load_memmap(out.string()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PythonFolderTest,
                         ::testing::Values("flat", "nested", "batch_2x3_dtypes", "device_cpu",
                                           "empty_batch", "lazy_stack"));

TEST_F(MemmapPythonTest, TheCopiedFixturesEqualTheSharedOnes) {
  // The copy must not drift from ../shared/fixtures (present beside a developer's checkout).
  const fs::path shared =
      fs::path(tdrl::testing::test_data_dir()).parent_path().parent_path().parent_path() /
      "shared" / "fixtures" / "python_tensordict";
  if (!fs::exists(shared)) GTEST_SKIP() << "no " << shared << " beside this checkout";
  std::map<std::string, std::string> ours;
  std::map<std::string, std::string> theirs;
  for (const auto& e : fs::recursive_directory_iterator(kPython))
    if (e.is_regular_file()) ours[fs::relative(e.path(), kPython).string()] = read_bytes(e.path());
  for (const auto& e : fs::recursive_directory_iterator(shared))
    if (e.is_regular_file()) theirs[fs::relative(e.path(), shared).string()] = read_bytes(e.path());
  EXPECT_EQ(ours, theirs);
}

TEST_F(MemmapPythonTest, APythonFolderLoadsItsKeysInTheOrderPythonWroteThem) {
  EXPECT_EQ(load_data(kPython / "flat").keys(), (std::vector<NestedKey>{"obs", "act", "flag"}));
  EXPECT_EQ(load_data(kPython / "nested").keys(),
            (std::vector<NestedKey>{"observation", "action", "next"}));
}

TEST_F(MemmapPythonTest, APythonNonTensorDataFolderLoadsAsOneValueForTheWholeBatch) {
  write_meta(prefix_, R"({"name": {"type": "NonTensorData"}, "shape": [3], "device": "cpu",
            "_type": "<class 'tensordict._td.TensorDict'>"})");
  write_meta(prefix_ + "/name",
             R"({"_type": "<class 'tensordict.tensorclass.NonTensorData'>", "data": "x",
            "_metadata": null, "_is_non_tensor": true})");
  const TensorDict td = TensorDict::load_memmap(prefix_);
  EXPECT_EQ(td.get_non_tensor<std::string>("name"), "x");
  EXPECT_EQ(td.get_non_tensor("name").batch_size(), BatchSize{3});
  // Alone, such a folder is no TensorDict.
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_ + "/name"); },
              ThrowsMessage<Error>(
                  AllOf(HasSubstr(prefix_ + "/name/meta.json"), HasSubstr("non-tensor value"))));
}

TEST_F(MemmapPythonTest, APickledNonTensorValueIsRefusedNamingItsFile) {
  // Python pickles what JSON cannot hold; tdrl never unpickles.
  write_meta(prefix_, R"({"obj": {"type": "NonTensorStack"}, "shape": [2], "device": "cpu",
            "_type": "<class 'tensordict._td.TensorDict'>"})");
  write_meta(prefix_ + "/obj",
             R"({"_type": "<class 'tensordict.tensorclass.NonTensorStack'>", "stack_dim": 0,
            "device": null, "data": "pickle.pkl"})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/obj/meta.json"), HasSubstr("pickle"),
                                         HasSubstr("does not read"))));
}

TEST_F(MemmapPythonTest, ATensorclassFolderIsRefusedNamingItsFileAndClass) {
  write_meta(prefix_, R"({"tc": {"type": "MyData"}, "shape": [], "device": "cpu",
            "_type": "<class 'tensordict._td.TensorDict'>"})");
  write_meta(prefix_ + "/tc", R"({"_type": "<class '__main__.MyData'>"})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/tc/meta.json"),
                                         HasSubstr("__main__.MyData"), HasSubstr("not read"))));
}

TEST_F(MemmapPythonTest, AnEntryWithTheEmptyKeyIsRefusedNamingTheFile) {
  // Python stores the empty key as "%.memmap"; a tdrl key is never empty.
  write_meta(prefix_,
             R"({"": {"device": "cpu", "shape": [], "dtype": "torch.float32", "is_nested": false},
            "shape": [], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  EXPECT_THAT(
      [&] { TensorDict::load_memmap(prefix_); },
      ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"), HasSubstr("the empty key"))));
}

TEST_F(MemmapPythonTest, AFolderOfANewerFormatVersionIsRefusedNamingBothVersions) {
  write_meta(prefix_,
             R"({"shape": [], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>",
            "_format_version": 2, "_class": "tensordict:TensorDict"})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"),
                                         HasSubstr("format version 2"), HasSubstr("up to 1"))));
}

TEST_F(MemmapPythonTest, ALeafWithoutElementsLoadsWithoutAFileAsPythonWritesIt) {
  // Python writes no file for a leaf of zero elements; one with elements must have its file.
  write_meta(
      prefix_,
      R"({"e": {"device": "cpu", "shape": [2, 0], "dtype": "torch.int32", "is_nested": false},
            "shape": [2], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>",
            "_format_version": 1, "_class": "tensordict:TensorDict"})");
  const TensorDict td = TensorDict::load_memmap(prefix_);
  EXPECT_EQ(shape_of(td.get("e")), (Shape{2, 0}));
  EXPECT_EQ(td.get("e").scalar_type(), torch::kInt);
  write_meta(
      prefix_,
      R"({"e": {"device": "cpu", "shape": [2, 1], "dtype": "torch.int32", "is_nested": false},
            "shape": [2], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(HasSubstr(prefix_ + "/e.memmap")));
}

TEST_F(MemmapPythonTest, AFolderWrittenBeforeNamesWereEncodedLoadsItsPlainFileNames) {
  // tensordict 0.4 and tdrl before format version 1 named files by the key as it is.
  TensorDict td({{"a b", torch::arange(2)}, {"n m", {{"c d", torch::ones({2})}}}}, {2});
  td.save(prefix_);
  fs::rename(prefix_ + "/a%20b.memmap", prefix_ + "/a b.memmap");
  fs::rename(prefix_ + "/n%20m/c%20d.memmap", prefix_ + "/n%20m/c d.memmap");
  fs::rename(prefix_ + "/n%20m", prefix_ + "/n m");
  expect_same(td, TensorDict::load_memmap(prefix_));
}

TEST_F(MemmapPythonTest, AKeyNamedLikeAFormatFieldKeepsItsEntryAsPythonDoes) {
  TensorDict td({{"_class", torch::zeros({2})}, {"_format_version", torch::ones({2})}}, {2});
  td.save(prefix_);
  const json meta = read_json(prefix_ + "/meta.json");
  EXPECT_TRUE(meta["_class"].is_object());
  EXPECT_TRUE(meta["_format_version"].is_object());
  expect_same(td, TensorDict::load_memmap(prefix_));
}

TEST_F(MemmapPythonTest, AJaggedTensorIsRefusedNamingItsEntry) {
  write_meta(
      prefix_,
      R"({"x": {"device": "cpu", "shape": [2, 1], "dtype": "torch.float32", "is_nested": true},
            "shape": [2], "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})");
  EXPECT_THAT([&] { TensorDict::load_memmap(prefix_); },
              ThrowsMessage<Error>(AllOf(HasSubstr(prefix_ + "/meta.json"), HasSubstr("'x'"),
                                         HasSubstr("nested (jagged)"))));
}

TEST_F(MemmapPythonTest, ASubfolderAnOlderPythonDidNotListLoadsAfterTheListedKeys) {
  // tensordict before 0.4 wrote no {"type": ...} entry for a nested TensorDict.
  TensorDict({{"y", torch::ones({2})}}, {2}).save(prefix_ + "/sub");
  write_meta(prefix_,
             R"({"shape": [2], "device": "None", "_type": "<class 'tensordict._td.TensorDict'>"})");
  const TensorDict td = TensorDict::load_memmap(prefix_);
  EXPECT_EQ(td.keys(), std::vector<NestedKey>{"sub"});
  EXPECT_TRUE(torch::equal(td.get({"sub", "y"}), torch::ones({2})));
}

// ---- what tdrl writes ---------------------------------------------------------------------------

TEST_F(MemmapPythonTest, TdrlFoldersHaveTheKeysAndValueTypesOfPythonsMetaJson) {
  const auto cpu = torch::Device(torch::kCPU);
  // As make_fixtures.py builds them (random values differ: layout only, except "flat").
  TensorDict flat({{"obs", torch::arange(12, torch::kFloat).reshape({3, 4})},
                   {"act", torch::tensor({1, 2, 3}, torch::kLong)},
                   {"flag", torch::tensor({true, false, true})}},
                  {3}, cpu);
  TensorDict nested({{"observation", torch::randn({4, 5})},
                     {"action", torch::randn({4, 2})},
                     {"next", TensorDict({{"reward", torch::randn({4, 1}, torch::kDouble)},
                                          {"done", torch::zeros({4, 1}, torch::kBool)},
                                          {"observation", torch::randn({4, 5})}},
                                         {4}, cpu)}},
                    {4}, cpu);
  TensorDict multi_dim({{"f16", torch::randn({2, 3, 2}).to(torch::kHalf)},
                        {"u8", torch::zeros({2, 3, 8}, torch::kByte)},
                        {"i32", torch::zeros({2, 3}, torch::kInt)},
                        {"f64", torch::randn({2, 3, 1}, torch::kDouble)}},
                       {2, 3}, cpu);
  std::vector<TensorDict> members;
  for (int64_t i = 0; i < 3; ++i)
    members.push_back(TensorDict(
        {{"a", torch::full({2}, static_cast<double>(i))}, {"b", torch::zeros({2, i + 1})}}, {2},
        cpu));
  const TensorDict lazy = tensordict::stack(members, 0);
  ASSERT_TRUE(lazy.is_lazy_stack());

  flat.save(prefix_ + "/flat");
  expect_same_layout(prefix_ + "/flat", kPython / "flat", true, /*same_bytes=*/true);
  nested.save(prefix_ + "/nested");
  expect_same_layout(prefix_ + "/nested", kPython / "nested", true, false);
  multi_dim.save(prefix_ + "/batch_2x3_dtypes");
  expect_same_layout(prefix_ + "/batch_2x3_dtypes", kPython / "batch_2x3_dtypes", true, false);
  lazy.save(prefix_ + "/lazy_stack");
  expect_same_layout(prefix_ + "/lazy_stack", kPython / "lazy_stack", true, true);
}

TEST_F(MemmapPythonTest, ATensorDictWithoutADeviceWritesDeviceNoneAsPythonDoes) {
  TensorDict({{"x", torch::zeros({2})}}, {2}).save(prefix_);
  EXPECT_EQ(read_json(prefix_ + "/meta.json")["device"], "None");
  EXPECT_FALSE(TensorDict::load_memmap(prefix_).device().has_value());
}

TEST_F(MemmapPythonTest, NonTensorValuesAreFoldersOfTheirOwnAsPythonWritesThem) {
  TensorDict td({{"x", torch::zeros({2})}}, {2});
  td.set("env", "CartPole-v1");
  td.set("tags", NonTensorData::per_element({AnyValue("a"), AnyValue("b")},
                                            torch::tensor({0, 1}, torch::kLong)));
  td.save(prefix_);
  const json meta = read_json(prefix_ + "/meta.json");
  EXPECT_EQ(meta["env"], json({{"type", "NonTensorData"}}));
  EXPECT_EQ(meta["tags"], json({{"type", "NonTensorStack"}}));
  EXPECT_FALSE(meta.contains("_tdrl"));  // the entries' order is the file's
  const json env = read_json(prefix_ + "/env/meta.json");
  EXPECT_EQ(env["_type"], "<class 'tensordict.tensorclass.NonTensorData'>");
  EXPECT_EQ(env["data"], "CartPole-v1");
  const json tags = read_json(prefix_ + "/tags/meta.json");
  EXPECT_EQ(tags["_class"], "tensordict:NonTensorStack");
  EXPECT_EQ(tags["data"], json::array({"a", "b"}));
  expect_same(td, TensorDict::load_memmap(prefix_));
}

TEST_F(MemmapPythonTest, ANestedLazyStackIsListedByItsClassName) {
  auto members = tensordict::stack(
      {TensorDict({{"x", torch::zeros({2})}}, {}), TensorDict({{"x", torch::zeros({3})}}, {})});
  TensorDict td({{"members", members}}, {2});
  td.save(prefix_);
  EXPECT_EQ(read_json(prefix_ + "/meta.json")["members"],
            json({{"type", "LazyStackedTensorDict"}}));
  expect_same(td, TensorDict::load_memmap(prefix_));
}

TEST_F(MemmapPythonTest, ShapeIsAReservedKeyAndBatchSizeNoLonger) {
  EXPECT_THAT(
      [&] {
        TensorDict({{"shape", torch::zeros({2})}}, {2}).save(prefix_);
      },
      ThrowsMessage<ValueError>(HasSubstr("'shape'")));
  TensorDict td({{"batch_size", torch::arange(2)}}, {2});
  td.save(prefix_);
  expect_same(td, TensorDict::load_memmap(prefix_));
}

// ---- folders tdrl 0.1 wrote ---------------------------------------------------------------------

// What tests/data/memmap/tdrl_0_1 holds (its README has the program that wrote it).
TensorDict tdrl_0_1_nested() {
  TensorDict next({{"reward", torch::arange(3, torch::kDouble).reshape({3, 1})},
                   {"done", torch::tensor({false, true, false}).reshape({3, 1})}},
                  {3});
  auto members = tensordict::stack({TensorDict({{"x", torch::arange(2, torch::kFloat)}}, {}),
                                    TensorDict({{"x", torch::arange(4, torch::kFloat)}}, {}),
                                    TensorDict({{"x", torch::arange(3, torch::kFloat)}}, {})});
  TensorDict td({{"obs", torch::arange(12, torch::kFloat).reshape({3, 4})},
                 {"action", torch::tensor({2, 0, 1}, torch::kLong)},
                 {"next", next}},
                {3});
  td.set("env", "CartPole-v1");
  td.set("tags", NonTensorData::per_element({AnyValue("a"), AnyValue("b"), AnyValue("c")},
                                            torch::tensor({0, 1, 2}, torch::kLong)));
  td.set("members", members);
  td.set("a_last", torch::full({3}, 7, torch::kInt));
  return td;
}

TEST_F(MemmapPythonTest, FoldersTdrl01WroteStillLoad) {
  expect_same(tdrl_0_1_nested(), load_data(kTdrl01 / "nested"));
  TensorDict a({{"obs", torch::arange(6, torch::kFloat).reshape({2, 3})}}, {2});
  TensorDict b({{"obs", torch::arange(10, torch::kFloat).reshape({2, 5})}}, {2});
  expect_same(tensordict::stack({a, b}, 1), load_data(kTdrl01 / "lazy_stack"));
  const TensorDict on_cpu = load_data(kTdrl01 / "device_cpu");
  EXPECT_EQ(on_cpu.device(), torch::Device(torch::kCPU));
  expect_same(TensorDict({{"x", torch::ones({2, 2}, torch::kHalf)}}, {2, 2}), on_cpu);
}

TEST_F(MemmapPythonTest, AFolderTdrl01WroteSavedAgainHasTheNewLayout) {
  const TensorDict old = load_data(kTdrl01 / "nested");
  old.save(prefix_);
  const json meta = read_json(prefix_ + "/meta.json");
  EXPECT_EQ(meta["shape"], json::array({3}));
  EXPECT_FALSE(meta.contains("batch_size"));
  EXPECT_EQ(meta["next"], json({{"type", "TensorDict"}}));
  expect_same(old, TensorDict::load_memmap(prefix_));
}

}  // namespace
