#include "harness/problem.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cudalab/error.hpp"

namespace cudalab::harness {

std::int64_t Problem::dim(const std::string& name) const {
  for (const Dim& d : dims)
    if (d.name == name) return d.size;
  throw Error(ErrorKind::invalid_argument, "the problem " + label() + " has no dimension '" + name + "'", __FILE__,
              __LINE__);
}

double Problem::param(const std::string& name) const {
  for (const Param& p : params)
    if (p.name == name) return p.value;
  throw Error(ErrorKind::invalid_argument, "the problem " + label() + " has no parameter '" + name + "'", __FILE__,
              __LINE__);
}

bool Problem::has_dim(const std::string& name) const {
  for (const Dim& d : dims)
    if (d.name == name) return true;
  return false;
}

bool Problem::has_param(const std::string& name) const {
  for (const Param& p : params)
    if (p.name == name) return true;
  return false;
}

std::int64_t Problem::elements() const {
  std::int64_t product = 1;
  for (const Dim& d : dims) product *= d.size;
  return product;
}

std::string Problem::size_label() const {
  if (dims.size() == 1) return dims.front().name + "=" + std::to_string(dims.front().size);
  std::string text;
  for (const Dim& d : dims) text += (text.empty() ? "" : "x") + std::to_string(d.size);
  return text;
}

std::string Problem::label() const {
  std::string text = size_label() + " " + to_string(dtype);
  for (const Param& p : params) text += " " + p.name + "=" + format_param(p.value);
  return text;
}

std::string Problem::key() const {
  std::string text = std::string("dtype=") + to_string(dtype);
  for (const Dim& d : dims) text += ";" + d.name + "=" + std::to_string(d.size);
  for (const Param& p : params) text += ";" + p.name + "=" + format_param(p.value);
  return text;
}

std::string format_param(double value) {
  // Whole numbers print as integers ("4096", not %g's "4.1e+03"); others in the shortest %g form
  // that reads back as the same double (%.17g always does), so 1.5 prints as "1.5".
  if (value == std::trunc(value) && std::fabs(value) < 1e15) return std::to_string(static_cast<long long>(value));
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

}  // namespace cudalab::harness
