// Memmap folders exchanged with the current Python tensordict (docs/memmap.md, "Exchanging with
// Python"). Run live where the build has a Python with tensordict: tests/python/
// tensordict_interop.py saves TensorDicts with Python's TensorDict.memmap and tdrl loads them;
// tdrl saves TensorDicts and the script loads them with TensorDict.load_memmap. Each side records
// what it saved (expected.json, in the format the script's docstring gives) and the other
// compares what it loaded with it, value by value. Folders the script wrote with tensordict
// 0.15.3 (tests/data/memmap/python_tensordict_0_15_3) are read in every lane.
//
// The Python is the one the build was configured with (TDRL_PYTHON, cmake/TdrlTesting.cmake):
// the PyPI lane's .venv-torch, with the tensordict that scripts/common.sh pins. Without one (the
// Debian lane) the live tests skip; memmap_python_test.cpp checks the committed folders of
// tensordict 0.4 in every lane.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <tensordict/dtype.h>
#include <tensordict/lazy_stacked_tensordict.h>
#include <tensordict/tensordict.h>

#include "support/build_paths.h"
#include "support/temp_dir.h"
#include "support/tensordict_fixtures.h"

extern char** environ;

// Named: the unity build puts this file in one translation unit with memmap_python_test.cpp.
namespace memmap_python_interop {
namespace {

using namespace tensordict::testing;
using ::testing::IsEmpty;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

// ---- describing a TensorDict as the script does -------------------------------------------------

json describe_tensor(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  json values = json::array();
  if (t.is_complex()) {
    const torch::Tensor pairs = torch::view_as_real(t.to(torch::kComplexDouble)).reshape({-1, 2});
    for (int64_t i = 0; i < pairs.size(0); ++i)
      values.push_back({pairs[i][0].item<double>(), pairs[i][1].item<double>()});
  } else if (t.scalar_type() == torch::kBool) {
    const torch::Tensor flat = t.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(flat[i].item<bool>());
  } else if (t.is_floating_point()) {
    const torch::Tensor flat = t.to(torch::kDouble).reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(flat[i].item<double>());
  } else {
    const torch::Tensor flat = t.to(torch::kLong).reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) values.push_back(flat[i].item<int64_t>());
  }
  return {{"kind", "tensor"},
          {"dtype", tensordict::dtype_name(t.scalar_type())},
          {"shape", t.sizes().vec()},
          {"values", values}};
}

json value_json(const AnyValue& v) {
  if (auto* s = v.get_if<std::string>()) return *s;
  if (auto* i = v.get_if<int64_t>()) return *i;
  if (auto* d = v.get_if<double>()) return *d;
  if (auto* b = v.get_if<bool>()) return *b;
  ADD_FAILURE() << "a non-tensor value of type " << v.type_name();
  return nullptr;
}

json describe(const Value& value, bool top = false);

json describe_tensordict(const TensorDict& td, bool top) {
  if (td.is_lazy_stack()) {
    LazyStackedTensorDict lazy(td);
    json members = json::array();
    for (const auto& member : lazy.tensordicts()) members.push_back(describe(member));
    return {
        {"kind", "LazyStackedTensorDict"}, {"stack_dim", lazy.stack_dim()}, {"members", members}};
  }
  json out = {{"kind", "TensorDict"}, {"batch_size", td.batch_size()}};
  if (top) out["device"] = td.device() ? json(td.device()->str()) : json(nullptr);
  json entries = json::object();
  for (const auto& key : td.keys()) entries[key.parts()[0]] = describe(td.get_value(key));
  out["entries"] = entries;
  return out;
}

json describe(const Value& value, bool top) {
  if (auto* t = std::get_if<torch::Tensor>(&value)) return describe_tensor(*t);
  if (auto* td = std::get_if<TensorDict>(&value)) return describe_tensordict(*td, top);
  const auto& nt = std::get<NonTensorData>(value);
  if (nt.is_uniform()) return {{"kind", "NonTensorData"}, {"value", value_json(nt.value())}};
  json values = json::array();
  for (const auto& v : nt.tolist()) values.push_back(value_json(v));
  return {{"kind", "NonTensorStack"}, {"batch_size", nt.batch_size()}, {"values", values}};
}

// Where `got` differs from `want`, each difference naming its path: objects by their keys (in
// any order), the rest exactly, of the same JSON type (an int64 is no double).
void diff(const json& got, const json& want, const std::string& path,
          std::vector<std::string>& out) {
  if (got.is_object() && want.is_object()) {
    std::set<std::string> got_keys;
    std::set<std::string> want_keys;
    for (const auto& [k, v] : got.items()) got_keys.insert(k);
    for (const auto& [k, v] : want.items()) want_keys.insert(k);
    if (got_keys != want_keys)
      out.push_back(path + ": keys " + json(got_keys).dump() + " but expected " +
                    json(want_keys).dump());
    for (const auto& [k, v] : want.items())
      if (got.contains(k)) diff(got[k], v, path + "/" + k, out);
    return;
  }
  if (got.is_array() && want.is_array()) {
    if (got.size() != want.size()) {
      out.push_back(path + ": " + std::to_string(got.size()) + " items but expected " +
                    std::to_string(want.size()));
      return;
    }
    for (size_t i = 0; i < want.size(); ++i)
      diff(got[i], want[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  // Integers parse as signed or unsigned: either is an integer, as on the Python side.
  const auto kind = [](const json& j) {
    return j.is_number_integer() ? std::string("integer") : std::string(j.type_name());
  };
  bool equal = kind(got) == kind(want);
  if (equal && got.is_number_integer()) {
    equal = got.get<int64_t>() == want.get<int64_t>();
  } else if (equal && got.is_number_float()) {
    equal = got.get<double>() == want.get<double>();
  } else if (equal) {
    equal = got == want;
  }
  if (!equal)
    out.push_back(path + ": " + got.dump() + " (" + kind(got) + ") but expected " + want.dump() +
                  " (" + kind(want) + ")");
}

// ---- running the script -------------------------------------------------------------------------

struct ScriptRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs tests/python/tensordict_interop.py with `args` under the configured Python.
ScriptRun run_script(const std::vector<std::string>& args, const fs::path& log) {
  const std::string python = tdrl::testing::python_interpreter();
  const std::string script = tdrl::testing::source_dir() + "/tests/python/tensordict_interop.py";
  std::vector<std::string> argv_strings = {python, script};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ScriptRun run;
  if (spawned != 0) {
    run.output = "cannot start " + python + ": " + std::strerror(spawned);
    return run;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.output = read_file_bytes(log.string());
  return run;
}

// ---- the cases tdrl saves for Python ------------------------------------------------------------

std::vector<std::pair<std::string, TensorDict>> tdrl_cases() {
  const auto cpu = torch::Device(torch::kCPU);
  std::vector<std::pair<std::string, TensorDict>> cases;
  cases.emplace_back("flat",
                     TensorDict({{"obs", torch::arange(12, torch::kFloat).reshape({3, 4}) / 8},
                                 {"act", torch::tensor({1, -2, 3}, torch::kLong)},
                                 {"flag", torch::tensor({true, false, true})}},
                                {3}));
  cases.emplace_back(
      "dtypes",
      TensorDict(
          {{"f16", (torch::arange(6, torch::kFloat).reshape({2, 3}) / 4).to(torch::kHalf)},
           {"bf16",
            (torch::arange(12, torch::kFloat).reshape({2, 3, 2}) - 5.5).to(torch::kBFloat16)},
           {"u8", torch::arange(250, 256, torch::kLong).reshape({2, 3}).to(torch::kByte)},
           {"i8", torch::tensor({-128, 0, 127, 1, 2, 3}, torch::kChar).reshape({2, 3})},
           {"i16", torch::tensor({-32768, 0, 32767, 4, 5, 6}, torch::kShort).reshape({2, 3})},
           {"i32", torch::tensor({INT32_MIN, 0, INT32_MAX, 7, 8, 9}, torch::kInt).reshape({2, 3})},
           {"i64", torch::tensor({-(int64_t{1} << 40), int64_t{0}, int64_t{1} << 40, int64_t{1},
                                  int64_t{2}, int64_t{3}},
                                 torch::kLong)
                       .reshape({2, 3})},
           {"f64",
            torch::tensor({0.1, -2.5, 1e300, 3.0, 4.0, 5.0}, torch::kDouble).reshape({2, 3})},
           {"b", torch::tensor({true, false, true, false, false, true}).reshape({2, 3})},
           {"c64", torch::view_as_complex(
                       torch::tensor({1.f, 2.f, 0.f, -3.f, 0.5f, 0.f, 1.f, 0.f, 2.f, 0.f, 0.f, 3.f})
                           .reshape({2, 3, 2}))},
           {"c128", torch::view_as_complex(torch::tensor({0.0, 0.1, -1.0, 0.0, 2.0, 0.0, 3.0, 0.0,
                                                          4.0, -4.0, 5.0, 0.0},
                                                         torch::kDouble)
                                               .reshape({2, 3, 2}))}},
          {2, 3}));
  // Keys Python stores under percent-encoded names, and keys kept as they are.
  cases.emplace_back(
      "odd_keys",
      TensorDict({{"a b", torch::zeros({2})},
                  {"x/y", torch::ones({2, 2}, torch::kHalf)},
                  {"\u00fcn\u00efc\u00f8de", torch::tensor({1.5, 2.5}).to(torch::kBFloat16)},
                  {"dot.key", torch::arange(2, torch::kLong).to(torch::kByte)},
                  {"pct%20", torch::arange(2, torch::kInt)},
                  {".", torch::tensor({3.0f, 4.0f})},
                  {"..", torch::tensor({5.0f, 6.0f})},
                  {"c:d<e>\"f|g?h*i\\j", torch::tensor({7, 8}, torch::kLong)},
                  {"tab\tkey", torch::tensor({true, true})},
                  {"sub dir/x",
                   TensorDict({{"in ner", torch::arange(4, torch::kFloat).reshape({2, 2})}}, {2})}},
                 {2}));
  cases.emplace_back(
      "nested",
      TensorDict(
          {{"observation", torch::randn({4, 5})},
           {"next", TensorDict({{"reward", torch::randn({4, 1}, torch::kDouble)},
                                {"done", torch::zeros({4, 1}, torch::kBool)},
                                {"deeper",
                                 TensorDict({{"z", torch::arange(8, torch::kLong).reshape({4, 2})}},
                                            {4, 2})}},
                               {4})},
           {"action", torch::randn({4, 2})}},
          {4}, cpu));
  cases.emplace_back("empty_batch", TensorDict({{"scalar", torch::tensor(7, torch::kLong)},
                                                {"vec", torch::arange(5, torch::kFloat)}},
                                               {}));
  cases.emplace_back("zero_sized", TensorDict({{"rows", torch::zeros({0, 3})},
                                               {"none", torch::zeros({0, 2, 0}, torch::kInt)}},
                                              {0}));
  cases.emplace_back(
      "no_elements",
      TensorDict({{"empty", torch::zeros({2, 0})}, {"full", torch::ones({2})}}, {2}));
  std::vector<TensorDict> members;
  for (int64_t i = 0; i < 3; ++i)
    members.push_back(
        TensorDict({{"a", torch::full({2}, static_cast<double>(i), torch::kFloat)},
                    {"b", torch::arange(2 * (i + 1), torch::kLong).reshape({2, i + 1})}},
                   {2}));
  cases.emplace_back("lazy_stack", tensordict::stack(members, 1));
  cases.emplace_back(
      "nested_lazy",
      TensorDict({{"x", torch::arange(2, torch::kFloat)},
                  {"members", tensordict::stack({TensorDict({{"y", torch::zeros({3})}}, {}),
                                                 TensorDict({{"y", torch::ones({4})}}, {})})}},
                 {2}));
  TensorDict non_tensor({{"x", torch::zeros({2, 2})}}, {2, 2});
  non_tensor.set("env", "CartPole-v1");
  non_tensor.set_non_tensor("steps", int64_t{7});
  non_tensor.set_non_tensor("gamma", 0.99);
  non_tensor.set_non_tensor("done", true);
  non_tensor.set("tags", NonTensorData::per_element(
                             {AnyValue("a"), AnyValue("b"), AnyValue("c"), AnyValue("d b")},
                             torch::arange(4, torch::kLong).reshape({2, 2})));
  non_tensor.set_non_tensor({"cfg", "lr"}, 0.5);
  // Per-element values over more dims than the batch, and numbers of both kinds.
  non_tensor.set(
      "grid",
      NonTensorData::per_element(
          {AnyValue(int64_t{1}), AnyValue(2.5), AnyValue(false)},
          torch::tensor({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}, torch::kLong).reshape({2, 2, 3})));
  cases.emplace_back("non_tensor", non_tensor);
  cases.emplace_back("device_none", TensorDict({{"x", torch::ones({2})}}, {2}));
  cases.emplace_back("format_keys", TensorDict({{"_class", torch::zeros({2})},
                                                {"_format_version", torch::ones({2})},
                                                {"stack_dim", torch::ones({2})}},
                                               {2}));
  return cases;
}

// ---- the tests ----------------------------------------------------------------------------------

std::string skip_reason() {
  return "no Python with tensordict for this build: the memmap interop tests run in the PyPI "
         "lane (scripts/setup.sh --torch pypi makes .venv-torch with tensordict, and "
         "TDRL_TORCH=pypi scripts/test.sh builds against it), or configure with "
         "-DTDRL_PYTHON=<python with tensordict>";
}

// The cases tensordict_interop.py writes: the test fails if one goes missing, rather than
// checking less.
const std::vector<std::string> kPythonCases = {
    "flat",        "dtypes",     "odd_keys",    "nested",     "empty_batch", "zero_sized",
    "no_elements", "lazy_stack", "nested_lazy", "non_tensor", "names",       "format_keys"};

// The folders of Python tensordict 0.15.3 (tests/data/memmap/python_tensordict_0_15_3): the
// current layout, read in every lane.
const fs::path kPython0153 =
    fs::path(tdrl::testing::test_data_dir()) / "memmap" / "python_tensordict_0_15_3";

// Loads each case of `folders`, which Python wrote with its expected.json, and compares it with
// what Python recorded; fails if a case is missing, rather than checking less.
void expect_loads_as_recorded(const fs::path& folders) {
  const json expected = read_json(folders / "expected.json")["cases"];
  std::vector<std::string> names;
  for (const auto& [name, want] : expected.items()) names.push_back(name);
  EXPECT_EQ(names, kPythonCases);
  for (const auto& [name, want] : expected.items()) {
    SCOPED_TRACE(name);
    TensorDict td;
    try {
      td = TensorDict::load_memmap((folders / name).string(), MemmapMode::kReadOnly);
    } catch (const tensordict::Error& e) {
      ADD_FAILURE() << "load_memmap: " << e.what();
      continue;
    }
    std::vector<std::string> differences;
    diff(describe(td, /*top=*/true), want, name, differences);
    EXPECT_THAT(differences, IsEmpty());
    // Keys load in the order Python inserted them (the order of its meta.json).
    if (!td.is_lazy_stack()) {
      std::vector<std::string> keys;
      for (const auto& key : td.keys()) keys.push_back(key.parts()[0]);
      std::vector<std::string> want_keys;
      for (const auto& [key, entry] : want["entries"].items()) want_keys.push_back(key);
      EXPECT_EQ(keys, want_keys);
    }
  }
}

// Checks that `ours` (tdrl's save) has the files of `theirs` (Python's) and meta.json files with
// the same entries and values in the same order, leaf files byte for byte. Allowed: tdrl's own
// "_tdrl" entries, Python's dim names (tdrl has none), and an empty file for a leaf without
// elements (Python writes none; it reads one).
void expect_same_files(const fs::path& ours, const fs::path& theirs) {
  SCOPED_TRACE(ours.string());
  json a = read_json(ours / "meta.json");
  json b = read_json(theirs / "meta.json");
  a.erase("_tdrl");
  b.erase("_names");
  EXPECT_EQ(a, b);
  std::set<std::string> a_files;
  std::set<std::string> b_files;
  for (const auto& e : fs::directory_iterator(ours)) {
    const std::string name = e.path().filename().string();
    const bool empty_leaf = e.path().extension() == ".memmap" && fs::file_size(e.path()) == 0;
    if (!(empty_leaf && !fs::exists(theirs / name))) a_files.insert(name);
  }
  for (const auto& e : fs::directory_iterator(theirs)) b_files.insert(e.path().filename().string());
  ASSERT_EQ(a_files, b_files);
  for (const auto& name : b_files) {
    if (fs::is_directory(theirs / name)) {
      expect_same_files(ours / name, theirs / name);
    } else if (name != "meta.json") {
      EXPECT_EQ(read_file_bytes((ours / name).string()), read_file_bytes((theirs / name).string()))
          << name;
    }
  }
}

// Each case of `folders` (written by Python), loaded and saved by tdrl into `out`, gives Python's
// files again.
void expect_saved_again_the_same(const fs::path& folders, const fs::path& out) {
  for (const auto& name : kPythonCases) {
    SCOPED_TRACE(name);
    const TensorDict td = TensorDict::load_memmap((folders / name).string(), MemmapMode::kReadOnly);
    td.save((out / name).string());
    expect_same_files(out / name, folders / name);
  }
}

TEST(PythonTensordict0153FolderTest, LoadWithTheValuesPythonRecorded) {
  expect_loads_as_recorded(kPython0153);
}

TEST(PythonTensordict0153FolderTest, SavedAgainByTdrlHaveTheSameFilesAndMetaJson) {
  TempDir dir;
  expect_saved_again_the_same(kPython0153, dir.path());
}

class MemmapPythonInteropTest : public ::testing::Test {
 protected:
  // Python saves its cases once for the tests that load them.
  static void SetUpTestSuite() {
    if (tdrl::testing::python_interpreter().empty()) return;
    python_dir_ = new TempDir();
    python_run_ = run_script({"write", (python_dir_->path() / "py").string()},
                             python_dir_->path() / "write.log");
  }
  static void TearDownTestSuite() {
    delete python_dir_;
    python_dir_ = nullptr;
  }
  void SetUp() override {
    if (tdrl::testing::python_interpreter().empty()) GTEST_SKIP() << skip_reason();
  }

  // The folders Python wrote; fails the test when the script did.
  static fs::path python_folders() {
    EXPECT_EQ(python_run_.exit_code, 0) << python_run_.output;
    return python_dir_->path() / "py";
  }

  static TempDir* python_dir_;
  static ScriptRun python_run_;
  TempDir dir_;
};

TempDir* MemmapPythonInteropTest::python_dir_ = nullptr;
ScriptRun MemmapPythonInteropTest::python_run_;

TEST_F(MemmapPythonInteropTest, FoldersPythonWritesLoadWithTheValuesPythonRecorded) {
  ASSERT_THAT(python_run_.output, HasSubstr("wrote " + std::to_string(kPythonCases.size())));
  expect_loads_as_recorded(python_folders());
}

TEST_F(MemmapPythonInteropTest, FoldersPythonWritesSavedAgainByTdrlHaveTheSameFilesAndMetaJson) {
  expect_saved_again_the_same(python_folders(), dir_.path());
}

TEST_F(MemmapPythonInteropTest, FoldersTdrlWritesLoadInPythonWithTheValuesTdrlRecorded) {
  torch::manual_seed(0);
  const fs::path folders = dir_.path() / "tdrl";
  json expected = json::object();
  const auto cases = tdrl_cases();
  for (const auto& [name, td] : cases) {
    SCOPED_TRACE(name);
    td.save((folders / name).string());
    expected[name] = describe(td, /*top=*/true);
  }
  std::ofstream(folders / "expected.json") << json({{"cases", expected}}).dump(1);
  const ScriptRun run = run_script({"check", folders.string()}, dir_.path() / "check.log");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("checked " + std::to_string(cases.size()) + " cases with tensordict"));
  EXPECT_THAT(run.output, HasSubstr(": 0 differences"));
}

}  // namespace
}  // namespace memmap_python_interop
