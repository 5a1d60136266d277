#include <tensordict/errors.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include <c10/util/Exception.h>

namespace tensordict {

std::string shape_str(c10::IntArrayRef shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_names(const std::string& wanted, const std::vector<std::string>& candidates) {
  std::vector<std::pair<size_t, std::string>> ranked;
  ranked.reserve(candidates.size());
  for (const auto& c : candidates) ranked.emplace_back(edit_distance(wanted, c), c);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ranked.size(); ++i) os << (i ? ", '" : "'") << ranked[i].second << "'";
  os << "]";
  return os.str();
}

[[noreturn]] void rethrow_with_prefix(const std::exception_ptr& error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const KeyError& e) {
    throw KeyError(prefix + e.what());
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const TypeError& e) {
    throw TypeError(prefix + e.what());
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  } catch (const c10::Error& e) {
    throw Error(prefix + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(prefix + e.what());
  } catch (...) {
    throw std::runtime_error(prefix + "an exception of unknown type");
  }
}

}  // namespace tensordict
